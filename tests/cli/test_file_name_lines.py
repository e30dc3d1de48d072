"""A file name cannot paint a line of its own in "files changed" or in undo's report.

The attack: a block in the default sandbox creates a file whose name holds a line feed
followed by what looks like another entry (``"x\\n  deleted   app.py  -120 +0"``). lmc's
stdout, read from outside, must show the name on its one line (the line feed drawn as
``^J``), with no line that starts like an entry lmc did not write. The way the list was
drawn before (the name as it is, through the terminal sanitizer, which keeps line feeds)
is shown painting the forged line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from support.cli_replays import code, final
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.messages.sanitize import for_terminal

Replay = Callable[..., Path]

FORGED = "  deleted   app.py  -120 +0"
NAME = "notes\n" + FORGED + "\nz.txt"


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def _forged_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  deleted   app.py")]


def test_a_name_with_line_feeds_stays_on_its_line(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("print('kept')\n")
    block = code(f"open({NAME!r}, 'w').write('x\\n')")  # runs in the default sandbox
    common = ["-m", str(tiny_model), "-y", "--workdir", str(work)]
    result = _run(lmc_env, "run", *common, "--replay", str(replay(block, final("ok"))), "go")
    assert result.exit_code == 0, result.stderr
    assert NAME in os.listdir(work)  # the code made it, from inside
    assert _forged_lines(result.stdout) == []
    assert "  added     notes^J  deleted   app.py  -120 +0^Jz.txt  +1 -0\n" in result.stdout

    undone = _run(lmc_env, "undo")
    assert undone.exit_code == 0, undone.stderr
    assert not (work / NAME).exists() and (work / "app.py").exists()
    assert _forged_lines(undone.stdout) == []
    assert "notes^J  deleted   app.py" in undone.stdout

    # Without the protection: the name drawn as it is, through the sanitizer alone.
    old = for_terminal(f"files changed:\n  {'added':<8}  {NAME}  +1 -0")
    assert _forged_lines(old) == [FORGED]
