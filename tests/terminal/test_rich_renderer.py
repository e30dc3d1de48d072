"""The rich renderer fed real chunk streams (the seed's, and variations), on a forced terminal."""

from __future__ import annotations

import base64
import io
import re
import time
from pathlib import Path

import pytest
from rich.console import Console
from support.seed_chunks import FINAL, SEED, strip_ansi

from lmc.messages import Chunk, CodeFormat
from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.rich_renderer import RichRenderer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAYAAAC56t6BAAAAEklEQVR4nGP8z8DwnwEIGGEMAD/1Av/IUdw3AAAAAElFTkSuQmCC"
)


def _console(width: int = 80, height: int = 40) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, height=height, color_system="256")
    return console, out


def _say(renderer: RichRenderer, text: str) -> None:
    """The model's answer ``text`` as one message, then the end of the turn."""
    stream: list[Chunk] = [
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": text},
        {"role": "assistant", "type": "message", "end": True},
    ]
    for chunk in stream:
        renderer.feed(chunk)
    renderer.close()


def _code(code: str, lang: CodeFormat = "python") -> list[Chunk]:
    return [
        {"role": "assistant", "type": "code", "format": lang, "start": True},
        {"role": "assistant", "type": "code", "format": lang, "content": code},
        {"role": "assistant", "type": "code", "format": lang, "end": True},
        {
            "role": "computer",
            "type": "confirmation",
            "format": "execution",
            "content": {"type": "code", "format": lang, "content": code},
        },
    ]


def _console_chunks(output: str) -> list[Chunk]:
    return [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
        {"role": "computer", "type": "console", "format": "output", "content": output},
        {"role": "computer", "type": "console", "format": "active_line", "content": None},
        {"role": "computer", "type": "console", "end": True},
    ]


def test_seed_stream_prints_code_output_and_answer_in_order() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    renderer.waiting()
    for chunk in SEED:
        renderer.feed(chunk)
    renderer.close()
    text = strip_ansi(out.getvalue())
    # The last static copy of each block is what stays in the scrollback.
    code_at = text.rindex("╭─ python")
    assert "34 / 24" in text[code_at:]
    output_at = text.rindex("1.4166666666666667")
    answer_at = text.rindex(FINAL)
    assert code_at < output_at < answer_at
    assert renderer.final_answer


def test_markdown_is_rendered_not_shown_raw() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    _say(renderer, "# Title\n\nsome **bold** text")
    raw = out.getvalue()
    assert "**bold**" not in strip_ansi(raw)
    assert "\x1b[1m" in raw  # bold


@pytest.mark.parametrize("answer", ["42.", "The answer is:\n\n42.", "7)"])
def test_an_answer_that_is_a_bare_number_is_shown(answer: str) -> None:
    """Markdown reads "42." alone as an empty numbered list item; the answer must still show."""
    console, out = _console()
    renderer = RichRenderer(console)
    _say(renderer, answer)
    shown = strip_ansi(out.getvalue())
    assert answer.splitlines()[-1] in shown


def test_real_numbered_lists_stay_lists() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    _say(renderer, "1. first\n2. second")
    shown = strip_ansi(out.getvalue())
    assert " 1 first" in shown and " 2 second" in shown


def test_live_refresh_is_throttled_not_per_token() -> None:
    """A token never draws by itself: Live's own thread redraws ``refresh_per_second``
    times a second. With a pace of one redraw per 100 s, 300 tokens draw the region twice:
    when it opens and the final static print (one draw per token would be 300)."""
    console, out = _console()
    renderer = RichRenderer(console, refresh_per_second=0.01)
    renderer.feed({"role": "assistant", "type": "message", "start": True})
    renderer.feed({"role": "assistant", "type": "message", "content": "START"})
    for _ in range(300):
        renderer.feed({"role": "assistant", "type": "message", "content": " word"})
    renderer.feed({"role": "assistant", "type": "message", "end": True})
    renderer.close()
    assert out.getvalue().count("START") == 2


def test_active_line_is_highlighted_while_code_runs() -> None:
    console, out = _console()
    renderer = RichRenderer(console, refresh_per_second=20)
    for chunk in _code("a = 1\nimport time\nb = 2\n"):
        renderer.feed(chunk)
    renderer.feed({"role": "computer", "type": "console", "start": True})
    renderer.feed({"role": "computer", "type": "console", "format": "active_line", "content": "2"})
    deadline = time.monotonic() + 60  # the live display redraws on its own thread: wait for it
    while "48;5;239" not in out.getvalue():
        assert time.monotonic() < deadline, "the live display never drew the active line"
        time.sleep(0.01)
    during = out.getvalue()
    renderer.feed({"role": "computer", "type": "console", "format": "active_line", "content": None})
    renderer.feed({"role": "computer", "type": "console", "end": True})
    renderer.close()
    highlighted = [
        line
        for line in during.splitlines()
        if "48;5;239" in line  # grey30 background
    ]
    assert highlighted, "no line had the active-line background"
    assert all("time" in strip_ansi(line) for line in highlighted)
    after = out.getvalue()[len(during) :]
    assert "48;5;239" not in after  # the finished block is printed without the highlight


def test_code_asked_about_is_left_to_the_confirm_view() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    for chunk in _code("print('hi')"):
        renderer.feed(chunk)
    renderer.pause()  # what the confirmer does before drawing its view and asking
    before = out.getvalue()
    assert "╭─ python" not in strip_ansi(before)
    for chunk in _console_chunks("hi\n"):
        renderer.feed(chunk)
    renderer.close()
    after = strip_ansi(out.getvalue()[len(before) :])
    assert "hi" in after
    assert "╭─ python" not in after  # the code is not printed a second time


def test_long_output_is_folded_to_head_and_tail() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    for chunk in _code("for i in range(500): print(f'line {i}')"):
        renderer.feed(chunk)
    for chunk in _console_chunks("".join(f"line {i}\n" for i in range(500))):
        renderer.feed(chunk)
    renderer.close()
    text = strip_ansi(out.getvalue())
    assert "470 more lines hidden" in text
    assert "line 0 " in text and "line 9 " in text
    assert "line 480" in text and "line 499" in text
    assert "line 250 " not in text


@pytest.mark.parametrize("show", [False, True])
def test_reasoning_hidden_unless_asked(show: bool) -> None:
    console, out = _console()
    renderer = RichRenderer(console, show_reasoning=show)
    stream: list[Chunk] = [
        {"role": "assistant", "type": "reasoning", "start": True},
        {"role": "assistant", "type": "reasoning", "content": "secret musings"},
        {"role": "assistant", "type": "reasoning", "end": True},
        {"role": "assistant", "type": "message", "content": "answer"},
    ]
    for chunk in stream:
        renderer.feed(chunk)
    renderer.close()
    raw = out.getvalue()
    assert ("secret musings" in strip_ansi(raw)) is show
    if show:
        assert "\x1b[2;3m" in raw  # dim italic
    assert "answer" in strip_ansi(raw)


def test_image_is_saved_and_shown_inline_with_kitty(tmp_path: Path) -> None:
    console, out = _console()
    renderer = RichRenderer(console, artifacts=ArtifactStore(tmp_path), image_protocol="kitty")
    for chunk in _code("plot()"):
        renderer.feed(chunk)
    renderer.feed({"role": "computer", "type": "console", "start": True})
    renderer.feed(
        {
            "role": "computer",
            "type": "image",
            "format": "base64.png",
            "content": base64.b64encode(PNG).decode(),
        }
    )
    renderer.feed({"role": "computer", "type": "console", "end": True})
    renderer.close()
    saved = list(tmp_path.glob("*.png"))
    assert len(saved) == 1 and saved[0].read_bytes() == PNG
    raw = out.getvalue()
    assert "\x1b_Gf=100,a=T" in raw
    text = " ".join(strip_ansi(raw).split())
    assert "2×3 image" in text and saved[0].name in text


def test_html_is_saved_and_opened(tmp_path: Path) -> None:
    console, out = _console()
    opened: list[Path] = []

    def opener(path: Path) -> bool:
        opened.append(path)
        return True

    renderer = RichRenderer(console, artifacts=ArtifactStore(tmp_path), open_html=opener)
    renderer.feed({"role": "computer", "type": "code", "format": "html", "content": "<b>hi</b>"})
    renderer.close()
    assert len(opened) == 1 and opened[0].read_text() == "<b>hi</b>"
    assert "opened in your browser" in strip_ansi(out.getvalue())


def test_notice_without_code_is_a_note_and_not_a_final_answer() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    renderer.feed({"role": "assistant", "type": "message", "content": "partial"})
    stream: list[Chunk] = [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "output", "content": "Stopped.\n"},
        {"role": "computer", "type": "console", "end": True},
    ]
    for chunk in stream:
        renderer.feed(chunk)
    renderer.close()
    assert "⚠ Stopped." in strip_ansi(out.getvalue())
    assert not renderer.final_answer


def test_interrupted_keeps_what_was_shown() -> None:
    console, out = _console()
    renderer = RichRenderer(console)
    for chunk in _code("import time\ntime.sleep(30)"):
        renderer.feed(chunk)
    renderer.feed({"role": "computer", "type": "console", "start": True})
    renderer.feed({"role": "computer", "type": "console", "format": "output", "content": "zzz\n"})
    renderer.interrupted()
    text = strip_ansi(out.getvalue())
    assert "zzz" in text and "⏹ interrupted" in text
    assert renderer._live is None  # no live region left behind


def test_hidden_reasoning_is_a_live_status_line_then_a_one_line_summary() -> None:
    from lmc.terminal.rich_renderer import _TextView, _Thinking

    now = [100.0]
    view = _TextView("reasoning")
    thinking = _Thinking(view, clock=lambda: now[0])
    view.parts.append("Let me think about the sum.\nFirst add the tens")
    now[0] = 112.4
    assert thinking.line() == "thinking 12s · Let me think about the sum."  # complete lines
    view.parts.append(".\n")
    assert thinking.line() == "thinking 12s · First add the tens."
    console, out = _console(width=40)
    view.parts.append("x" * 200 + "\n")
    console.print(thinking)
    shown = strip_ansi(out.getvalue()).strip().splitlines()
    assert len(shown) == 1 and shown[0].endswith("…")  # one line, cut to the width

    console, out = _console()
    renderer = RichRenderer(console)
    stream: list[Chunk] = [
        {"role": "assistant", "type": "reasoning", "start": True},
        {"role": "assistant", "type": "reasoning", "content": "secret musings"},
        {"role": "assistant", "type": "reasoning", "end": True},
        {"role": "assistant", "type": "message", "content": "answer"},
    ]
    for chunk in stream:
        renderer.feed(chunk)
    renderer.close()
    text = strip_ansi(out.getvalue())
    assert re.search(r"thought for \d+s \(%reasoning show shows it\)", text)
    assert "secret musings" not in text


def test_link_urls_are_shown_as_text() -> None:
    """Not only inside an OSC 8 escape, which a terminal without hyperlinks does not show (and
    a link's text can name another place than its URL)."""
    console, out = _console()
    renderer = RichRenderer(console)
    _say(renderer, "See [the docs](https://example.org/docs) or <https://a.example/b>.")
    shown = strip_ansi(out.getvalue())
    assert "the docs (https://example.org/docs)" in shown, shown
    assert "or https://a.example/b." in shown and "(https://a.example/b)" not in shown  # once
    assert "\x1b]8;" not in out.getvalue()
