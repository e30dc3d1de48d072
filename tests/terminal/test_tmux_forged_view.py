"""Issue 35: the confirm view cannot be forged. The model's code hides ESC sequences in a
comment that, drawn raw, erase the line that opens a file and paint ``print("world")`` in its
place. In a real terminal (tmux) the escapes are drawn visibly and the file is not opened on
a no; with the sanitizer switched off (a wrapper around lmc) the same block shows only the
harmless lines, and the yes the person gives opens the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.replay import write_replay
from support.tmux import ROOT, lmc_env, start

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

#: Line 2 opens PWNED; its comment erases the line, returns to its start and paints a
#: harmless line 2 over it (ESC [1G, not a carriage return: the replay file is read with
#: universal newlines).
FORGED = 'print("hello")\nopen("PWNED", "w")  # \x1b[2K\x1b[1G│   2 print("world")\x1b[K'

#: lmc with the one sanitizer (and the view's warnings) switched off: the unprotected path.
UNSAFE = """\
import lmc.messages.sanitize as sanitize

sanitize.for_terminal = lambda text, *, keep_cr=False: text
sanitize.controls_in = lambda text: 0
sanitize.invisible_in = lambda text: []

from lmc.cli.app import main

main()
"""


def _replay(tmp_path: Path) -> Path:
    return write_replay(
        tmp_path / "r.txt",
        [
            f"<|channel|>analysis to=python code<|message|>{FORGED}<|call|>",
            "<|channel|>final<|message|>Done.<|return|>",
        ],
    )


def test_the_forged_block_shows_its_escapes_and_its_real_line(
    tiny_model: Path, tmp_path: Path
) -> None:
    args = ["run", "-m", str(tiny_model), "--replay", str(_replay(tmp_path)), "greet"]
    pane, work = start(tmp_path, args)
    try:
        pane.wait_for(r"Run this code\?")
        screen = pane.screen(history=False)
        assert 'open("PWNED", "w")' in screen  # the line that runs is on screen
        assert "^[[2K^[[1G" in screen  # its escapes drawn, not obeyed
        assert "python · 2 lines" in screen and "3 control characters shown as" in screen
        pane.type_line("n")
        pane.wait_for(r"Why not\?")
        pane.type_line("")
        pane.wait_for("LMC-EXITED")
        assert not (work / "PWNED").exists()
    finally:
        pane.kill()


def test_without_the_sanitizer_the_same_block_is_forged_and_runs(
    tiny_model: Path, tmp_path: Path
) -> None:
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "unsafe_lmc.py").write_text(UNSAFE)
    env = lmc_env(tmp_path, PYTHONPATH=f"{ROOT}:{mods}")
    args = ["run", "-m", str(tiny_model), "--replay", str(_replay(tmp_path)), "greet"]
    pane, work = start(tmp_path, args, env=env, module="unsafe_lmc")
    try:
        pane.wait_for(r"Run this code\?")
        screen = pane.screen(history=False)
        assert 'print("world")' in screen and "PWNED" not in screen  # the forgery holds
        pane.type_line("y")  # the person approves what they were shown
        pane.wait_for("LMC-EXITED")
        assert (work / "PWNED").exists()  # and the hidden line ran
    finally:
        pane.kill()


def test_a_long_line_shows_its_end_and_an_unsaved_edit_runs_nothing(
    tiny_model: Path, tmp_path: Path
) -> None:
    hiding = "echo 'all good'" + " " * 300 + "; touch HIDDEN"
    replay = write_replay(
        tmp_path / "r.txt",
        [
            f"<|channel|>analysis to=shell code<|message|>{hiding}<|call|>",
            "<|channel|>final<|message|>Done.<|return|>",
        ],
    )
    env = lmc_env(tmp_path, VISUAL="true")  # an editor that quits without saving
    args = ["run", "-m", str(tiny_model), "--replay", str(replay), "check"]
    pane, work = start(tmp_path, args, env=env)
    try:
        pane.wait_for(r"Run this code\?")
        assert "; touch HIDDEN" in pane.screen(history=False)  # wrapped onto the next row
        mark = pane.mark()
        pane.type_line("e")
        pane.wait_for(r"not changed in the editor: answer again", after=mark)
        pane.wait_for(r"Please answer y, n, e, a, r or v", after=mark)
        pane.type_line("n")
        pane.wait_for(r"Why not\?")
        pane.type_line("")
        pane.wait_for("LMC-EXITED")
        assert not (work / "HIDDEN").exists()
    finally:
        pane.kill()
