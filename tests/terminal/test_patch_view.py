"""The confirm view of apply_patch: a coloured diff per file, safe text, the same answers."""

from __future__ import annotations

import io

from rich.console import Console
from support.asking import scripted_asker

from lmc.messages import ToolCallBlock
from lmc.terminal.confirm import Confirmer
from lmc.terminal.patch_view import patch_lines
from lmc.terminal.question import Terminal

PATCH = (
    "*** Begin Patch\n"
    "*** Add File: hello.txt\n"
    "+Hello world\n"
    "*** Update File: src/app.py\n"
    "*** Move to: src/main.py\n"
    "@@ def greet():\n"
    '-print("Hi")\n'
    '+print("Hello, world!")\n'
    "*** Update File: notes.txt\n"
    " keep\n"
    "-old\n"
    "+new\n"
    "*** Delete File: obsolete.txt\n"
    "*** End Patch\n"
)
BLOCK: ToolCallBlock = {"type": "tool_call", "format": "apply_patch", "content": PATCH}


def test_each_file_is_headed_by_what_happens_to_it_and_lines_are_coloured() -> None:
    lines, files = patch_lines(PATCH)
    assert files == 4
    assert lines == [
        ("added hello.txt", "bold green"),
        ("+Hello world", "green"),
        ("moved src/app.py → src/main.py", "bold yellow"),
        ("@@ def greet():", "cyan"),
        ('-print("Hi")', "red"),
        ('+print("Hello, world!")', "green"),
        ("updated notes.txt", "bold yellow"),
        ("@@", "cyan"),
        (" keep", "dim"),
        ("-old", "red"),
        ("+new", "green"),
        ("deleted obsolete.txt", "bold red"),
    ]


def test_the_models_text_is_drawn_not_obeyed() -> None:
    hostile = PATCH.replace("+Hello world", "+\x1b]0;owned\x07Hi \u202eevil").replace(
        "hello.txt", "he\x1b[2Jllo.txt"
    )
    lines, _ = patch_lines(hostile)
    shown = "\n".join(text for text, _style in lines)
    assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert "+^[]0;owned^GHi <U+202E>evil" in shown
    assert "added he^[[2Jllo.txt" in shown
    # Without the sanitizer the escape would reach the terminal as it is.
    assert "\x1b]0;owned" in hostile


def test_a_patch_that_does_not_parse_is_shown_as_written_under_the_reason() -> None:
    lines, files = patch_lines("*** Begin Patch\n*** Frob: x\n*** End Patch")
    assert files == 0
    assert lines[0][0].startswith("not a valid patch (invalid hunk at line 2, '*** Frob: x'")
    assert [text for text, _ in lines[1:]] == ["*** Begin Patch", "*** Frob: x", "*** End Patch"]


def _terminal() -> tuple[Terminal, io.StringIO]:
    out = io.StringIO()
    terminal = Terminal(out)
    terminal._console = Console(
        file=out, force_terminal=True, color_system="truecolor", width=100, height=40
    )
    return terminal, out


def test_the_confirm_view_shows_the_diff_and_a_approves_later_patches() -> None:
    terminal, out = _terminal()
    asked, ask = scripted_asker("a")
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, terminal=terminal, ask=ask, say=said.append)
    assert confirmer(BLOCK) is True
    drawn = out.getvalue()
    assert "apply_patch · 4 files" in drawn
    assert "moved src/app.py → src/main.py" in drawn
    assert "\x1b[31m" in drawn or "\x1b[38;2;" in drawn  # coloured
    assert said == ["approved the tool apply_patch (this session) (%approvals lists the rules)"]
    other: ToolCallBlock = {
        "type": "tool_call",
        "format": "apply_patch",
        "content": "*** Begin Patch\n*** Delete File: x\n*** End Patch",
    }
    assert confirmer(other) is True  # a later patch: not asked
    assert len(asked) == 1
    mcp: ToolCallBlock = {"type": "tool_call", "format": "fs.write_file", "content": "{}"}
    assert confirmer(mcp) is False  # another tool is still asked about (no answer: declined)
    assert len(asked) == 2


def test_n_declines_with_a_reason_and_e_edits_the_patch() -> None:
    terminal, _ = _terminal()
    _asked, ask = scripted_asker("n wrong file", "e")
    edited = PATCH.replace("+new", "+newer")
    confirmer = Confirmer(
        auto_run=False,
        terminal=terminal,
        ask=ask,
        say=lambda _text: None,
        edit=lambda language, text: edited if language == "apply_patch" else text,
    )
    declined = confirmer(BLOCK)
    assert getattr(declined, "reason", None) == "wrong file"
    assert confirmer(BLOCK) == edited


def test_r_offers_a_rule_for_patches_and_config_rules_name_the_tool() -> None:
    from lmc.agent.approvals import Approvals

    terminal, _ = _terminal()
    asked, ask = scripted_asker("r", "", "s")  # the offered rule, for the session
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, terminal=terminal, ask=ask, say=said.append)
    assert confirmer(BLOCK) is True
    assert asked[1] == "Approve which command prefix or language? [apply_patch] "
    assert said[-1] == "approved the tool apply_patch for this session"
    assert Approvals.from_config(["apply_patch"]).allows(BLOCK) is not None
    assert Approvals.from_config(["tool:apply_patch"]).allows(BLOCK) is not None
