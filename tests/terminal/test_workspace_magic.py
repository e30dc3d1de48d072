"""%undo N --force, %diff, %checkpoints and %compact against a real Interpreter: the tiny
model replaying, a real shell kernel changing real files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.replay import write_replay

from lmc import Computer, Interpreter
from lmc.errors import WorkspaceError
from lmc.terminal.confirm import Confirmer
from lmc.terminal.magic import ChatState, run_magic


def shell(code: str) -> str:
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


@pytest.fixture
def chat(tiny_model: Path, tmp_path: Path) -> Iterator[tuple[ChatState, list[str], Path]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("one\n")
    replay = write_replay(
        tmp_path / "replay.txt",
        [
            shell("echo two >> a.txt"),
            final("appended"),
            shell("rm a.txt && echo b > b.txt"),
            final("swapped"),
            final("SUMMARY: a.txt grew, then became b.txt."),  # the %compact request's answer
        ],
    )
    computer = Computer(cwd=work, sandbox="off")
    interpreter = Interpreter(
        model=str(tiny_model), replay=replay, db_path=tmp_path / "c.db", computer=computer,
        auto_run=True,
    )  # fmt: skip
    said: list[str] = []
    try:
        for prompt in ("append two", "swap files"):
            interpreter.chat(prompt, display=False)
        yield (
            ChatState(
                interpreter, Confirmer(auto_run=True, ask=None, say=said.append), said.append
            ),
            said,
            work,
        )
    finally:
        interpreter.close()
        computer.close()


def test_diff_checkpoints_undo(chat: tuple[ChatState, list[str], Path]) -> None:
    state, said, work = chat
    run_magic("%diff", state)
    assert "deleted file mode 100644" in said[-1] and "+b" in said[-1]
    run_magic("%checkpoints", state)
    assert said[-1].splitlines() == [
        "turns whose files can be restored (%undo N goes back to before turn N):",
        "    1  2 files changed    swap files",
        "    2  1 file changed     append two",
    ]
    (work / "mine.txt").write_text("by hand\n")
    with pytest.raises(WorkspaceError, match="changed by hand since the last turn"):
        run_magic("%undo 2", state)
    run_magic("%undo nope", state)
    assert said[-1] == "usage: %undo [N] [--force]"
    run_magic("%undo 2 --force", state)
    assert said[-1].startswith("undid the last 2 turns: removed ")
    assert "restored 3 files" in said[-1] and "Kernel state" in said[-1]
    assert sorted(p.name for p in work.iterdir()) == ["a.txt"]
    assert (work / "a.txt").read_text() == "one\n"
    run_magic("%checkpoints", state)
    assert said[-1] == "no checkpoints yet: they are taken before the model's code runs"


def test_compact_on_demand(chat: tuple[ChatState, list[str], Path]) -> None:
    state, said, _ = chat
    run_magic("%compact", state)
    assert "asks the model, in a request of its own, to summarise messages 1-" in said[-1]
    assert "SUMMARY: a.txt grew, then became b.txt." in said[-1]
    assert "SUMMARY: a.txt grew" in state.interpreter._loop.prompt()
