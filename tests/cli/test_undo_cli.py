"""``lmc undo``, ``--verbose`` and ``lmc doctor`` on checkpoints and AGENTS.md, through typer's
CliRunner with the tiny model replaying, real kernels and real files in a git project."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from support.cli_replays import code, final
from support.workspace_testing import files_of, git, git_state
from typer.testing import CliRunner

from lmc.cli.app import app

Replay = Callable[..., Path]


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    git(project, "init", "-q")
    (project / "AGENTS.md").write_text("Root rule.\n")
    (project / "sub" / "AGENTS.md").write_text("Sub rule.\n")
    (project / "sub" / "notes.txt").write_text("alpha\n")
    (project / "sub" / "notes.txt").chmod(0o640)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "init")
    return project


def test_run_shows_changes_and_lmc_undo_restores_them(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    project = _project(tmp_path)
    work = project / "sub"
    before, before_git = files_of(project), git_state(project)
    edit = code(
        "import os\nopen('notes.txt', 'a').write('beta\\n')\nos.remove('AGENTS.md')\n"
        "open('made.txt', 'w').write('new\\n')"
    )
    common = ["-m", str(tiny_model), "-y", "--sandbox", "off", "--workdir", str(work)]
    result = _run(
        lmc_env, "run", "--verbose", *common, "--replay", str(replay(edit, final("ok"))), "edit"
    )
    assert result.exit_code == 0, result.stderr
    assert "files changed:\n  deleted   AGENTS.md  +0 -1\n  added     made.txt  +1 -0\n" in (
        result.stdout
    )
    assert "  modified  notes.txt  +1 -0" in result.stdout
    agents = f"AGENTS.md read: {project / 'AGENTS.md'}, {work / 'AGENTS.md'}"
    assert f"lmc: {agents}" in result.stderr
    doctor = _run(lmc_env, "doctor", "--workdir", str(work))
    assert f"✓ AGENTS.md    {project / 'AGENTS.md'}\n" in doctor.stdout  # sub's was removed
    assert "✓ checkpoints  on" in doctor.stdout

    undone = _run(lmc_env, "undo")
    assert undone.exit_code == 0, undone.stderr
    assert "undid the last turn: removed 5 messages" in undone.stdout
    assert f"restored 3 files in {work}: AGENTS.md, made.txt, notes.txt" in undone.stdout
    assert "Kernel state (variables, imports, running processes) cannot be undone" in undone.stdout
    assert files_of(project) == before and git_state(project) == before_git
    assert _run(lmc_env, "undo").stdout.endswith("nothing to undo\n")


def test_lmc_undo_refuses_over_hand_edits_unless_forced(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    work = _project(tmp_path) / "sub"
    edit = code("open('made.txt', 'w').write('new\\n')")
    common = ["-m", str(tiny_model), "-y", "--sandbox", "off", "--workdir", str(work)]
    assert (
        _run(lmc_env, "run", *common, "--replay", str(replay(edit, final("ok"))), "go").exit_code
        == 0
    )
    (work / "notes.txt").write_text("edited by hand\n")
    conversation = _run(lmc_env, "history").stdout.split()[0]
    refused = _run(lmc_env, "undo", "--conversation", conversation[:6])
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        "lmc: error: 1 file changed by hand since the last turn (notes.txt); undo would "
        "overwrite them: nothing was undone",
        "lmc: hint: lmc undo --force restores anyway",
    ]
    assert (work / "made.txt").exists()
    forced = _run(lmc_env, "undo", "--conversation", conversation, "--force")
    assert forced.exit_code == 0 and not (work / "made.txt").exists()
    assert (work / "notes.txt").read_text() == "alpha\n"
    assert os.stat(work / "notes.txt").st_mode & 0o777 == 0o640


def test_json_carries_the_files_chunk(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    work = _project(tmp_path) / "sub"
    edit = code("open('notes.txt', 'w').write('alpha\\nbeta\\n')")
    common = ["-m", str(tiny_model), "-y", "--sandbox", "off", "--workdir", str(work), "--json"]
    result = _run(lmc_env, "run", *common, "--replay", str(replay(edit, final("ok"))), "edit")
    assert result.exit_code == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    files = [c for c in chunks if c["type"] == "files"]
    assert files == [
        {"role": "computer", "type": "files", "format": "changes", "start": True},
        {
            "role": "computer",
            "type": "files",
            "format": "changes",
            "content": [{"path": "notes.txt", "change": "modified", "added": 1, "removed": 0}],
        },
        {"role": "computer", "type": "files", "format": "changes", "end": True},
    ]
