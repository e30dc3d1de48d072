"""Issue 35: the confirm view shows exactly what runs, whatever the code holds."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import pytest
from rich.console import Console
from rich.syntax import Syntax

from lmc.agent.approvals import Declined
from lmc.messages import CodeBlock
from lmc.terminal.confirm import Confirmer, edit_in_editor
from lmc.terminal.confirm_view import block_body, confirm_view

FORGED = 'print("hello")  # \x1b[1A\x1b[2K\rprint("world")\nopen("PWNED", "w")'


def _drawn(renderable: object, width: int = 80) -> str:
    out = io.StringIO()
    # No colours: every escape sequence in the output would be one the code brought.
    Console(file=out, width=width, force_terminal=True, color_system=None).print(renderable)
    return out.getvalue()


def test_escape_sequences_are_drawn_and_flagged_not_obeyed() -> None:
    shown = _drawn(confirm_view("python", FORGED, 24))
    assert "\x1b" not in shown and "\r" not in shown
    assert '^[[1A^[[2K^Mprint("world")' in shown and 'open("PWNED", "w")' in shown
    assert "⚠ 3 control characters shown as ^X or <U+…> (ESC is ^[)" in shown
    # The unprotected path: the same code drawn by rich alone sends the escapes on.
    assert "\x1b[1A\x1b[2K" in _drawn(Syntax(FORGED, "python"))


def test_c1_and_del_are_drawn_too() -> None:
    shown = _drawn(confirm_view("shell", "echo a\x9b2J\x7f", 24))
    assert "\x9b" not in shown and "\x7f" not in shown
    assert "echo a<U+009B>2J^?" in shown


def test_bidi_and_zero_width_characters_are_named_in_a_warning() -> None:
    code = "access = 'user\u202e \u2066# admin\u2069\u2066'\nok = 1\u200b"
    shown = _drawn(confirm_view("python", code, 24))
    assert not any(char in shown for char in "\u202e\u2066\u2069\u200b")
    words = " ".join(shown.replace("│", " ").split())
    assert "(U+200B, U+202E, U+2066, U+2069) are shown as <U+…>" in words
    assert "user<U+202E>" in shown


def test_a_line_wider_than_the_terminal_wraps_so_its_end_shows() -> None:
    code = "echo 'all good'" + " " * 300 + "; touch HIDDEN"
    shown = _drawn(confirm_view("shell", code, 24, width=60), width=60)
    assert "HIDDEN" in shown
    # Cut without a mark (rich's own view, no wrap), the end is simply gone.
    unwrapped = _drawn(Syntax(code, "bash", word_wrap=False), width=60)
    assert "HIDDEN" not in unwrapped


def test_a_line_of_many_screens_keeps_its_start_and_end_and_says_what_was_cut() -> None:
    code = "x = '" + "A" * 20_000 + "'; import os; os.remove('data')\nprint(x)"
    shown = _drawn(confirm_view("python", code, 24, width=60), width=60)
    assert "os.remove('data')" in shown and "print(x)" in shown
    assert "characters cut⟫" in shown and "long line 1: its middle is cut here" in shown
    assert len(shown.splitlines()) <= 24 - 3  # the question still fits below it


def test_a_tall_block_of_wrapped_lines_still_leaves_room_for_the_question() -> None:
    code = "\n".join(f"print('{'y' * 150}')  # line {n}" for n in range(1, 40))
    shown = _drawn(confirm_view("python", code, 24, width=80))
    assert len(shown.splitlines()) <= 24 - 3
    assert "more lines (v shows them all)" in shown and "# line 39" in shown


def test_block_body_is_reusable_by_other_views() -> None:
    body, warnings = block_body("python", "a = 1\x1b[2J", height=24, width=80)
    assert warnings and "^[[2J" in _drawn(body)


@pytest.fixture
def no_save_editor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A real editor that exits at once, saving nothing (like quitting vi with :q!)."""
    monkeypatch.setenv("VISUAL", "true")
    yield
    assert os.environ["VISUAL"] == "true"


BLOCK: CodeBlock = {"type": "code", "format": "python", "content": "1 / 0"}


def test_an_edit_quit_without_saving_runs_nothing_and_asks_again(no_save_editor: None) -> None:
    replies = iter(["e", "n", ""])
    asked: list[str] = []
    said: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(replies)

    confirmer = Confirmer(auto_run=False, ask=ask, say=said.append)
    assert confirmer(BLOCK) == Declined("")
    assert said == ["the code was not changed in the editor: answer again"]
    assert asked[1].startswith("Please answer")
    # The editor alone hands the original block back: the confirmer used to run that.
    assert edit_in_editor("python", "1 / 0") == "1 / 0"
