"""The %commands against a real Interpreter (tiny model, replay, no code run)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from support.replay import write_replay

from lmc import Interpreter
from lmc.terminal.confirm import Confirmer
from lmc.terminal.magic import HELP, ChatState, is_magic, run_magic


@pytest.fixture
def state(tiny_model: Path, tmp_path: Path) -> Iterator[tuple[ChatState, list[str]]]:
    replay = write_replay(
        tmp_path / "replay.txt",
        [
            "<|channel|>final<|message|>Hello!<|return|>",
            "<|channel|>final<|message|>Bye.<|return|>",
        ],
    )
    interpreter = Interpreter(model=str(tiny_model), replay=replay, db_path=tmp_path / "c.db")
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=None, say=said.append)
    try:
        for _ in interpreter.chat("hi", stream=True, display=False):
            pass
        yield ChatState(interpreter, confirmer, said.append), said
    finally:
        interpreter.close()


def test_is_magic() -> None:
    assert is_magic("%undo") and is_magic("  %help") and not is_magic("100% sure")


def test_save_load_and_export(
    state: tuple[ChatState, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat, said = state
    monkeypatch.chdir(tmp_path)
    before = list(chat.interpreter.messages)
    run_magic("%save", chat)
    (saved,) = tmp_path.glob("lmc-*.json")
    assert said[-1] == f"saved {len(before)} messages to {saved.name}"
    run_magic("%reset", chat)
    assert chat.interpreter.messages == []
    run_magic("%load", chat)
    assert chat.interpreter.messages == before
    run_magic("%export talk.ipynb", chat)
    notebook = nbformat.read(tmp_path / "talk.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert notebook.cells[0].source == "**User:**\n\nhi"
    run_magic("%export talk.md", chat)
    assert "## Assistant\n\nHello!" in (tmp_path / "talk.md").read_text()


def test_undo_tokens_auto_run_verbose(state: tuple[ChatState, list[str]]) -> None:
    chat, said = state
    run_magic("%tokens", chat)
    # The default context: the tiny model's trained context (its KV cache fits easily).
    assert said[-2].startswith("context: ") and "of 16384 tokens used" in said[-2]
    assert said[-1].startswith("context size: 16,384 tokens: lmc tiny gpt-oss's trained context")
    run_magic("%undo", chat)
    assert said[-1] == "undid the last turn: removed 2 messages"  # no code ran: no files
    run_magic("%undo", chat)
    assert said[-1] == "nothing to undo"
    run_magic("%auto_run on", chat)
    assert chat.confirmer.auto_run
    run_magic("%auto_run off", chat)
    assert not chat.confirmer.auto_run
    # A bare switch shows its state in the words it takes, and changes nothing.
    run_magic("%auto_run", chat)
    assert said[-1] == "auto_run: off" and not chat.confirmer.auto_run
    run_magic("%verbose", chat)
    assert said[-1] == "verbose: off" and not chat.verbose
    run_magic("%verbose on", chat)
    assert chat.verbose
    run_magic("%verbose", chat)
    assert said[-1] == "verbose: on" and chat.verbose
    run_magic("%verbose off", chat)
    assert not chat.verbose
    run_magic("%approvals", chat)
    assert said[-1].startswith("no approval rules")


def test_unknown_and_help(state: tuple[ChatState, list[str]]) -> None:
    chat, said = state
    run_magic("%frobnicate now", chat)
    assert said[-1] == f"unknown command %frobnicate\n{HELP}"
    run_magic("%help", chat)
    assert said[-1] == HELP
    run_magic("%", chat)
    assert said[-1] == HELP


def test_jobs_and_stop(state: tuple[ChatState, list[str]]) -> None:
    """A block handed back (a real ``sleep``, block_timeout 1 s) is listed and stopped."""
    from support.processes import unique_seconds, wait_until_gone

    chat, said = state
    run_magic("%jobs", chat)
    assert said[-1].startswith("no jobs")
    run_magic("%stop 1", chat)
    assert said[-1].startswith("usage: %stop N")
    computer = chat.interpreter.computer
    computer.block_timeout = 1.0
    sleep = ("sleep", unique_seconds(1000))
    for _ in computer.run("shell", "echo 'hi\x1b[2J'; " + " ".join(sleep)):
        pass
    run_magic("%jobs", chat)
    assert said[-1].startswith("1  running")
    assert "sleep" in said[-1] and "\x1b" not in said[-1]
    run_magic("%stop 1", chat)
    assert said[-1] == "job 1 stopped (interrupted)"
    assert wait_until_gone(*sleep)
    run_magic("%jobs", chat)
    assert said[-1].startswith("1  stopped")
