"""Checkpoints end to end: real shell, python and node kernels change real files in a git
project; the changes come out as ``files`` chunks; undo puts every byte and mode back and
never touches the project's own .git."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter
from support.workspace_testing import empty, files_of, git, git_state

from lmc.computer import Computer
from lmc.errors import WorkspaceError
from lmc.messages import ChangedFile, Chunk, validate_chunk

FINAL = "<|channel|>final<|message|>{}<|return|>"
FILES_SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_files_server.py"


def python_call(code: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{code}<|call|>"


def function_call(name: str, code: str) -> str:
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("project")


@pytest.fixture(scope="module")
def computer(project: Path) -> Iterator[Computer]:
    """Kernels working in the project (overrides the agent tests' shared one)."""
    with Computer(cwd=project, sandbox="off") as shared:
        yield shared


@pytest.fixture
def fresh(project: Path) -> Path:
    """The project as a new git repository with a stash, a staged change and odd modes."""
    empty(project)
    git(project, "init", "-q")
    (project / "notes.txt").write_text("alpha\nbeta\n")
    (project / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (project / "tool.sh").chmod(0o755)
    (project / "secret.env").write_text("TOKEN=1\n")
    (project / "secret.env").chmod(0o600)
    (project / "data.bin").write_bytes(bytes(range(256)) * 4)
    (project / ".gitignore").write_text("*.log\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "init")
    (project / "notes.txt").write_text("alpha\nbeta\nstashed\n")
    git(project, "stash", "-q")
    (project / "staged.txt").write_text("in the index\n")
    git(project, "add", "staged.txt")
    return project


def file_chunks(chunks: list[Chunk]) -> list[list[ChangedFile]]:
    return [c["content"] for c in chunks if c["type"] == "files" and "content" in c]


def test_blocks_in_three_languages_are_shown_and_undone_byte_exact(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    before_files, before_git = files_of(fresh), git_state(fresh)
    interpreter, _ = make_interpreter(
        [
            function_call("shell", "sed -i 's/beta/BETA/' notes.txt && rm secret.env"),
            python_call(
                "import os\n"
                "open('data.bin', 'wb').write(b'\\x00new')\n"
                "os.makedirs('out/deep')\n"
                "open('out/deep/r.txt', 'w').write('one\\ntwo\\n')\n"
                "os.chmod('tool.sh', 0o644)"
            ),
            function_call("javascript", "require('fs').writeFileSync('js.txt', 'from node\\n')"),
            FINAL.format("done"),
        ],
        auto_run=True,
    )
    chunks = list(interpreter.chat("change things", stream=True, display=False))
    assert file_chunks(chunks) == [
        [
            {"path": "notes.txt", "change": "modified", "added": 1, "removed": 1},
            {"path": "secret.env", "change": "deleted", "added": 0, "removed": 1},
        ],
        [
            {"path": "data.bin", "change": "modified", "added": None, "removed": None},
            {"path": "out/deep/r.txt", "change": "added", "added": 2, "removed": 0},
            {"path": "tool.sh", "change": "modified", "added": 0, "removed": 0},
        ],
        [{"path": "js.txt", "change": "added", "added": 1, "removed": 0}],
    ]
    # == would take True or 1.0 for 1: the counts are whole numbers (None: binary), exactly.
    counts = [(f["added"], f["removed"]) for files in file_chunks(chunks) for f in files]
    assert {type(n) for pair in counts for n in pair} == {int, type(None)}, counts
    for chunk in chunks:
        if chunk["type"] == "files":
            validate_chunk(chunk)
    # The files chunk comes right after its block's output, and is kept in the history.
    kinds = [(c["type"], bool(c.get("end"))) for c in chunks]
    assert kinds.index(("files", False)) > kinds.index(("console", True))
    assert sum(m["type"] == "files" for m in interpreter.messages) == 3
    assert "-beta" in (interpreter.diff() or "") and "+from node" in (interpreter.diff() or "")
    [checkpoint] = interpreter.checkpoints()
    assert (checkpoint.turns_back, checkpoint.prompt, checkpoint.changes) == (1, "change things", 6)
    assert git_state(fresh) == before_git

    dropped = interpreter.undo()
    assert dropped[0]["content"] == "change things" and interpreter.messages == []
    assert files_of(fresh) == before_files
    assert git_state(fresh) == before_git
    report = interpreter.last_undo
    assert report is not None
    lines = "\n".join(report.lines())
    assert "restored 6 files" in lines and "Kernel state" in lines and "cannot be undone" in lines


def test_undo_refuses_to_overwrite_changes_made_by_hand(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    interpreter, _ = make_interpreter(
        [function_call("shell", "echo gamma >> notes.txt"), FINAL.format("ok")], auto_run=True
    )
    interpreter.chat("append", display=False)
    (fresh / "mine.txt").write_text("typed by the person\n")
    count = len(interpreter.messages)
    with pytest.raises(WorkspaceError, match=r"1 file changed by hand since the last turn \(mine"):
        interpreter.undo()
    assert len(interpreter.messages) == count  # nothing was undone
    assert (fresh / "notes.txt").read_text().endswith("gamma\n")
    interpreter.undo(force=True)
    assert (fresh / "notes.txt").read_text() == "alpha\nbeta\n"
    assert not (fresh / "mine.txt").exists()


def test_undo_several_turns_and_a_turn_without_code(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    interpreter, _ = make_interpreter(
        [
            function_call("shell", "echo 1 > one.txt"),
            FINAL.format("one"),
            FINAL.format("just talk"),
            function_call("shell", "echo 2 > two.txt"),
            FINAL.format("two"),
        ],
        auto_run=True,
    )
    for prompt in ("first", "chat", "second"):
        interpreter.chat(prompt, display=False)
    assert [c.turns_back for c in interpreter.checkpoints()] == [1, 3]
    interpreter.undo(2)
    assert [m["content"] for m in interpreter.messages if m["role"] == "user"] == ["first"]
    assert (fresh / "one.txt").exists() and not (fresh / "two.txt").exists()
    interpreter.undo()
    assert not (fresh / "one.txt").exists()


def test_checkpoints_off_changes_nothing(make_interpreter: MakeInterpreter, fresh: Path) -> None:
    interpreter, _ = make_interpreter(
        [function_call("shell", "echo x > x.txt"), FINAL.format("ok")],
        auto_run=True,
        checkpoints=False,
    )
    chunks = list(interpreter.chat("go", stream=True, display=False))
    assert file_chunks(chunks) == []
    interpreter.undo()
    assert (fresh / "x.txt").exists()  # only the conversation was undone
    assert interpreter.last_undo is not None
    assert "files were not restored" in "\n".join(interpreter.last_undo.lines())


def test_a_tool_call_that_changes_files_is_shown_and_undone(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    """An MCP server's call is checkpointed like a code block (a filesystem server)."""
    before_files = files_of(fresh)
    arguments = json.dumps({"path": "notes.txt", "text": "rewritten by a tool\n"})
    interpreter, _ = make_interpreter(
        [
            "<|channel|>commentary to=functions.files__write_file <|constrain|>json"
            f"<|message|>{arguments}<|call|>",
            FINAL.format("done"),
        ],
        auto_run=True,
        mcp_servers={"files": {"command": sys.executable, "args": [str(FILES_SERVER), str(fresh)]}},
    )
    chunks = list(interpreter.chat("rewrite the notes", stream=True, display=False))
    assert (fresh / "notes.txt").read_text() == "rewritten by a tool\n"
    assert file_chunks(chunks) == [
        [{"path": "notes.txt", "change": "modified", "added": 1, "removed": 2}]
    ]
    interpreter.undo()
    assert files_of(fresh) == before_files
