"""The output window the views keep: what fold_output shows, in bounded memory."""

from __future__ import annotations

import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from lmc.terminal.fold import MAX_LINE_CHARS, OutputWindow, fold_output


def _as_terminal(text: str) -> str:
    """``text`` with each line as a terminal leaves it after its carriage returns."""
    lines = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        lines.append(line[line.rfind("\r") + 1 :])
    return "\n".join(lines)


@given(
    st.lists(st.sampled_from(["a", "xyz", "\n", "\n\n", "\r\n"]), max_size=60).map("".join),
    st.lists(st.integers(min_value=1, max_value=40), max_size=30),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=1, max_value=4),
)
def test_the_window_shows_what_folding_all_the_output_shows(
    text: str, cuts: list[int], head: int, tail: int
) -> None:
    window = OutputWindow(head, tail)
    start = 0
    for size in [*cuts, len(text)]:
        window.add(text[start : start + size])
        start += size
    window.add(text[start:])
    assert window.folded() == fold_output(_as_terminal(text), head, tail)


def test_progress_bars_keep_their_last_state() -> None:
    window = OutputWindow()
    for percent in range(0, 101, 10):
        window.add(f"\r{percent}%")
    window.add("\ndone\n")
    assert window.folded().head == "100%\ndone"


def test_memory_stays_bounded_however_much_is_printed() -> None:
    piece = ("y" * 99 + "\n") * 640  # 64 KB
    endless = "z" * 5_000_000  # a line with no end
    window = OutputWindow()
    tracemalloc.start()
    try:
        for _ in range(800):  # 50 MB
            window.add(piece)
        window.add(endless)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024  # the pieces were never kept
    folded = window.folded()
    assert folded.hidden_lines == 800 * 640 + 1 - 10 - 20
    assert folded.tail.endswith(f"{'z' * 10}… ({5_000_000 - MAX_LINE_CHARS} more characters)")
