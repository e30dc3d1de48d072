"""apply_patch from the command line: ``lmc run --json`` carries the call, its result and the
files chunk; ``lmc undo`` puts the files back (the tiny model replays gpt-oss's call)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.cli_replays import final
from support.workspace_testing import files_of
from typer.testing import CliRunner

from lmc.cli.app import app

Replay = Callable[..., Path]

PATCH = (
    "*** Begin Patch\n"
    "*** Update File: notes.txt\n"
    " alpha\n"
    "+beta\n"
    "*** Add File: made.txt\n"
    "+new\n"
    "*** End Patch"
)


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def test_json_carries_the_patch_and_lmc_undo_restores_it(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\n")
    before = files_of(work)
    call = f"<|channel|>commentary to=functions.apply_patch<|message|>{PATCH}<|call|>"
    script = replay(call, final("Edited."))
    common = ["-m", str(tiny_model), "-y", "--sandbox", "off", "--workdir", str(work)]
    result = _run(lmc_env, "run", "--json", *common, "--replay", str(script), "edit")
    assert result.exit_code == 0, result.stderr
    chunks: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [c for c in chunks if c["type"] == "tool_call"]
    assert {c["format"] for c in calls} == {"apply_patch"}
    assert "".join(c.get("content", "") for c in calls) == PATCH
    confirmation = next(c for c in chunks if c["type"] == "confirmation")
    block = {"type": "tool_call", "format": "apply_patch", "content": PATCH}
    assert confirmation["content"] == block
    output = "".join(c.get("content", "") for c in chunks if c.get("format") == "output")
    assert output == "Done!"
    files = [c["content"] for c in chunks if c["type"] == "files" and "content" in c]
    assert files == [
        [
            {"path": "made.txt", "change": "added", "added": 1, "removed": 0},
            {"path": "notes.txt", "change": "modified", "added": 1, "removed": 0},
        ]
    ]
    assert (work / "notes.txt").read_text() == "alpha\nbeta\n"

    undone = _run(lmc_env, "undo")
    assert undone.exit_code == 0, undone.stderr
    assert f"restored 2 files in {work}: made.txt, notes.txt" in undone.stdout
    assert files_of(work) == before


def test_read_only_sandbox_declares_no_patch_tool(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    """With --sandbox read-only the tool is not there: a call to it is told it does not exist."""
    work = tmp_path / "work"
    work.mkdir()
    call = f"<|channel|>commentary to=functions.apply_patch<|message|>{PATCH}<|call|>"
    script = replay(call, final("I cannot edit."))
    common = ["-m", str(tiny_model), "-y", "--sandbox", "read-only", "--workdir", str(work)]
    result = _run(lmc_env, "run", "--json", *common, "--replay", str(script), "edit")
    assert result.exit_code == 0, result.stderr
    assert "There is no tool named 'functions.apply_patch'" in result.stdout
    assert not (work / "made.txt").exists()
