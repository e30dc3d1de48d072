"""AGENTS.md discovery from the working directory up to the repository root, and what the
developer message says with and without it."""

from __future__ import annotations

import os
import subprocess
import sys
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


# -- AGENTS.md is the model's to write: links, special files and giants -----------------------


def _prompt(workdir: Path, tmp_path: Path) -> str:
    """The text the model's next request starts with (system and developer messages)."""

    class Here:
        cwd = workdir

    with Interpreter(
        computer=Here(),  # type: ignore[arg-type]
        db_path=tmp_path / "prompt.db",
    ) as interpreter:
        return interpreter._prefix()


def test_a_link_to_a_private_key_never_reaches_the_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    key = home / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET-KEY-BYTES\n")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(os.path.expanduser("~/.ssh/id_rsa"), work / "AGENTS.md")  # what the code did
    assert "SECRET-KEY-BYTES" not in _prompt(work, tmp_path)
    assert read_agents(work, 32 * 1024).paths == ()
    # The old read (Path.read_bytes follows the link) put the key in the prompt:
    assert b"SECRET-KEY-BYTES" in (work / "AGENTS.md").read_bytes()


_PROMPT_OF = """
import sys
from pathlib import Path
from lmc import Interpreter

class Here:
    cwd = Path(sys.argv[1])

if sys.argv[3] == "old":  # the read lmc did before: Path.read_bytes, following the link
    print(Path(sys.argv[1], "AGENTS.md").read_bytes().decode("latin-1"))
with Interpreter(computer=Here(), db_path=sys.argv[2]) as interpreter:
    print(interpreter._prefix())
"""


def test_a_link_to_proc_environ_never_reaches_the_prompt(tmp_path: Path) -> None:
    """/proc/self/environ is lmc's own environment as it started: a child lmc process with a
    planted key builds its prompt."""
    work = tmp_path / "work"
    work.mkdir()
    os.symlink("/proc/self/environ", work / "AGENTS.md")
    env = {**os.environ, "OPENAI_API_KEY": "sk-planted-0123456789"}

    def prompt(mode: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _PROMPT_OF, str(work), str(tmp_path / f"{mode}.db"), mode],
            env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        return done.stdout

    assert "sk-planted-0123456789" not in prompt("new")
    assert "sk-planted-0123456789" in prompt("old")  # the old read carried the key


def test_a_fifo_or_a_folder_is_skipped_without_hanging(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "AGENTS.md")
    assert read_agents(work, 1024).text == ""
    (work / "AGENTS.md").unlink()
    (work / "AGENTS.md").mkdir()
    assert read_agents(work, 1024).text == ""


def test_a_sparse_giant_costs_no_more_than_the_cap(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    giant = work / "AGENTS.md"
    with giant.open("wb") as handle:
        handle.write(b"Rule one.\n")
        handle.truncate(512 * 1024 * 1024)  # sparse: no disk used
    reads: list[int] = []
    real_read = os.read

    def counting(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    mp = pytest.MonkeyPatch()
    mp.setattr(os, "read", counting)
    try:
        doc = read_agents(work, 4096)
    finally:
        mp.undo()
    assert doc.truncated and "Rule one." in doc.text
    assert sum(reads) <= 4097  # read no more than the cap (one byte more tells it was longer)
    assert "Rule one." in _prompt(work, tmp_path)
    assert giant.stat().st_size == 512 * 1024 * 1024  # the old read_bytes() took all of it
