"""Checkpoints degrade rather than stop: a block that makes more files than the cap, then
overwrites a file. The flood's folder is left out with a note the person sees, the overwrite
is still snapshotted and undone, and undo never calls the model's change the person's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter, python_call, shell_call
from support.workspace_testing import empty

from lmc.agent.checkpoints import Checkpointer
from lmc.computer import Computer
from lmc.errors import WorkspaceError
from lmc.messages import Chunk, text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"
FLOOD = (
    "import os\nos.makedirs('flood', exist_ok=True)\n"
    "for i in range(301):\n    open(f'flood/{i}', 'w').close()\n"
    "open('notes.txt', 'w').write('overwritten\\n')"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("degrade")


@pytest.fixture(scope="module")
def computer(project: Path) -> Iterator[Computer]:
    with Computer(cwd=project, sandbox="off") as shared:
        yield shared


@pytest.fixture
def fresh(project: Path) -> Path:
    empty(project)
    (project / "notes.txt").write_text("alpha\n")
    return project


def _notes(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("type") == "message")


def test_a_flood_is_left_out_with_a_note_and_the_overwrite_undone(
    make_interpreter: MakeInterpreter, fresh: Path
) -> None:
    interpreter, _ = make_interpreter(
        [python_call(FLOOD), FINAL.format("done")], auto_run=True, checkpoint_max_files=300
    )
    chunks = list(interpreter.chat("flood", stream=True, display=False))
    files = [c["content"] for c in chunks if c["type"] == "files" and "content" in c]
    assert files == [[{"path": "notes.txt", "change": "modified", "added": 1, "removed": 1}]]
    assert "flood/ left out of checkpoints: more than 300 files" in _notes(chunks)
    interpreter.undo()
    assert (fresh / "notes.txt").read_text() == "alpha\n"
    assert len(list((fresh / "flood").iterdir())) == 301  # left as it is, as the note said


def test_when_checkpoints_go_off_mid_turn_undo_does_not_blame_the_person(
    make_interpreter: MakeInterpreter, fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second block's snapshots fail (any reason: here git is made to fail); that block
    changes a file. On main undo then said "1 file changed by hand"."""
    interpreter, _ = make_interpreter(
        [
            shell_call("echo one >> notes.txt"),
            shell_call("echo two >> notes.txt"),
            FINAL.format("done"),
        ],
        auto_run=True,
    )
    real = Checkpointer.before_block
    calls = iter(range(100))

    def failing_second(self: Checkpointer) -> str | None:
        if next(calls) == 1:
            return self._fail(WorkspaceError("git add failed: disk full"))
        return real(self)

    monkeypatch.setattr(Checkpointer, "before_block", failing_second)
    chunks = list(interpreter.chat("append twice", stream=True, display=False))
    assert "Checkpoints are off for this session: git add failed" in _notes(chunks)
    with pytest.raises(WorkspaceError) as refused:
        interpreter.undo()
    assert "changed by hand since" not in str(refused.value)
    assert "checkpoints went off during a turn being undone" in str(refused.value)
    interpreter.undo(force=True)
    assert (fresh / "notes.txt").read_text() == "alpha\n"
