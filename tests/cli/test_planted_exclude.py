"""A ``.git/info/exclude`` the code plants cannot hide its files from "files changed" or undo.

The attack: in a folder with no ``.git`` when the sandbox started (so none it keeps
read-only), a block writes ``.git/info/exclude`` holding ``*``, then drops new files. The
checkpoints read the project's exclude once, before the session's code ran, so the files are
still listed (lmc's stdout, read from outside) and ``lmc undo`` removes them. Re-reading the
exclude at every snapshot, as before, hides them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from support.cli_replays import final
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.workspace.shadow import ShadowRepo

Replay = Callable[..., Path]

PLANT = "mkdir -p .git/info && printf '*\\n' > .git/info/exclude && echo x > dropper.sh"


def _shell(source: str) -> str:
    arguments = json.dumps({"code": source})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def test_a_planted_exclude_hides_nothing(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("keep\n")
    completions = replay(_shell(PLANT), _shell("echo y > second.sh"), final("ok"))
    common = ["-m", str(tiny_model), "-y", "--workdir", str(work)]
    result = _run(lmc_env, "run", *common, "--replay", str(completions), "go")
    assert result.exit_code == 0, result.stderr
    assert (work / ".git" / "info" / "exclude").read_text() == "*\n"  # planted from inside
    assert "  added     dropper.sh  +1 -0" in result.stdout
    assert "  added     second.sh  +1 -0" in result.stdout
    undone = _run(lmc_env, "undo")
    assert undone.exit_code == 0, undone.stderr
    assert not (work / "dropper.sh").exists() and not (work / "second.sh").exists()
    assert (work / "keep.txt").read_text() == "keep\n"


def test_re_reading_the_exclude_at_each_snapshot_hid_the_files(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("keep\n")
    repo = ShadowRepo(work, tmp_path / "shadow")
    before = repo.snapshot()
    (work / ".git" / "info").mkdir(parents=True)
    (work / ".git" / "info" / "exclude").write_text("*\n")
    (work / "dropper.sh").write_text("x\n")
    repo._project_exclude = None  # the old way: the exclude read again now
    assert repo.snapshot().tree == before.tree  # dropper.sh is not in it
