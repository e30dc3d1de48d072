"""Readable output and the bound on what is kept of it for the model."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from lmc.computer import BoundedOutput, bound_output
from lmc.computer.output import TextCleaner, clean_text


def test_short_output_is_kept_whole() -> None:
    assert bound_output("hello\n", 100) == "hello\n"


def test_long_output_keeps_head_and_tail_and_says_how_much() -> None:
    text = "".join(f"line {i}\n" for i in range(10_000))
    bounded = bound_output(text, 1000)
    assert bounded.startswith("line 0\nline 1\n")
    assert bounded.endswith("line 9999\n")
    assert f"the output was {len(text):,} characters" in bounded
    assert len(bounded) < 1200


def test_bounded_output_memory_does_not_grow_with_input() -> None:
    bounded = BoundedOutput(1000)
    piece = "y" * 999 + "\n"
    for _ in range(20_000):  # 20 MB through it
        bounded.add(piece)
    assert bounded._head_size + bounded._tail_size <= 1000
    assert sum(len(p) for p in bounded._tail) <= 1000
    assert bounded.total == 20_000_000


def test_carriage_return_progress_bars_fold_to_their_last_state() -> None:
    assert bound_output("0%\r50%\r100%\ndone\n") == "100%\ndone\n"
    assert bound_output("a\r\nb\r\n") == "a\nb\n"  # Windows line ends are line ends


def test_progress_bar_split_across_pieces() -> None:
    bounded = BoundedOutput()
    for piece in ["\r1", "0%", "\r", "20%\r", "\n", "ok\r", "\nend"]:
        bounded.add(piece)
    assert bounded.text() == "20%\nok\nend"


def test_a_line_without_end_is_bounded_too() -> None:
    bounded = BoundedOutput(100)
    for _ in range(1000):
        bounded.add("z" * 100)
    assert len(bounded._folder._line) <= 100
    assert bounded.total == 100_000


@given(st.text(alphabet="ab\r\n", max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_folding_does_not_depend_on_how_output_is_split(text: str, cuts: list[int]) -> None:
    whole = BoundedOutput(10_000)
    whole.add(text)
    pieces = BoundedOutput(10_000)
    previous = 0
    for cut in sorted(cuts):
        pieces.add(text[previous:cut])
        previous = max(previous, cut)
    pieces.add(text[previous:])
    assert pieces.text() == whole.text()


@given(st.text(max_size=300), st.integers(2, 200))
def test_bound_output_never_exceeds_limit_plus_the_size_line(text: str, limit: int) -> None:
    bounded = bound_output(text, limit)
    assert len(bounded) <= limit + 120


def test_clean_text_removes_escapes_and_controls() -> None:
    assert clean_text("\x1b[1;31mred\x1b[0m\x07 \x1b]0;title\x07ok\x1b(B") == "red ok"
    assert clean_text("tab\tand\r\nnewline") == "tab\tand\r\nnewline"
    assert clean_text("bad \udcff byte") == "bad \ufffd byte"


def test_clean_text_removes_c1_controls_and_their_sequences() -> None:
    text = "a\x9b2Jb\x9d2;title\x07c\x85d é"
    assert clean_text(text) == "abcd é"
    # Without the C1 pass (the cleaner before issue 35) the CSI went through.
    assert "\x9b" in re.sub(r"\x1b", "", text)


def test_escape_split_between_pieces_is_still_removed() -> None:
    cleaner = TextCleaner()
    assert cleaner.feed("a\x1b[3") == "a"
    assert cleaner.feed("1mb\x1b") == "b"
    assert cleaner.feed("[0m") == ""
    assert cleaner.flush() == ""
