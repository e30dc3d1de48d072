"""AGENTS.md discovery from the working directory up to the repository root, and what the
developer message says with and without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc import Interpreter
from lmc.agent.tools import developer_message, system_message
from lmc.harmony.render import render_conversation
from lmc.workspace.agents_md import find_agents_files, read_agents


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """outside/AGENTS.md above repo/ (a git repository), repo/AGENTS.md, repo/a/AGENTS.md,
    and repo/a/b/c, the working directory, with no file of its own."""
    (tmp_path / "AGENTS.md").write_text("Outside the repository: never read.\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Root rule: run pytest before you finish.\n")
    (repo / "a" / "b" / "c").mkdir(parents=True)
    (repo / "a" / "AGENTS.md").write_text("Folder a: use tabs.\n")
    return repo / "a" / "b" / "c"


def test_files_from_the_root_down_to_the_workdir(nested: Path) -> None:
    repo = nested.parents[2]
    assert find_agents_files(nested) == [repo / "AGENTS.md", repo / "a" / "AGENTS.md"]
    doc = read_agents(nested, 32 * 1024)
    assert doc.text.index("Root rule") < doc.text.index("Folder a")
    assert "Outside" not in doc.text and not doc.truncated


def test_without_a_repository_only_the_workdir_counts(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("parent\n")
    work = tmp_path / "w"
    work.mkdir()
    assert find_agents_files(work) == []
    (work / "AGENTS.md").write_text("own\n")
    assert find_agents_files(work) == [work / "AGENTS.md"]


def test_the_text_is_capped(nested: Path) -> None:
    repo = nested.parents[2]
    (repo / "AGENTS.md").write_text("x" * 5000)
    doc = read_agents(nested, 1000)
    assert doc.truncated and "x" * 1000 in doc.text and "x" * 1001 not in doc.text
    assert "[AGENTS.md text cut at 1,000 bytes]" in doc.text
    assert read_agents(nested, 0).paths == ()  # 0: not read at all


def test_the_developer_message_carries_it_and_is_unchanged_without(
    nested: Path, tmp_path: Path
) -> None:
    class Here:
        cwd = nested

    with Interpreter(
        computer=Here(),  # type: ignore[arg-type]
        db_path=tmp_path / "c.db",
        instructions="Be brief.",
        apply_patch=False,  # its instructions would follow AGENTS.md
    ) as interpreter:
        prefix = interpreter._prefix()
        assert "Be brief.\n\n# AGENTS.md" in prefix
        assert "Root rule: run pytest" in prefix and "Folder a: use tabs." in prefix
        assert [p.name for p in interpreter.agents_md().paths] == ["AGENTS.md", "AGENTS.md"]
        for path in interpreter.agents_md().paths:
            path.unlink()
        today = render_conversation(
            [system_message("medium"), developer_message("Be brief.", str(nested), [])],
            next_role=None,
        )
        assert interpreter._prefix() == today  # byte for byte what it was before AGENTS.md
