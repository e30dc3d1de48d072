"""Fixtures for the agent tests: the real llama.cpp path (tiny model + replay), real kernels.

Every test gets its own data and cache directories, so nothing is written to the user's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.agent_testing import MakeInterpreter, RecordingBackend, Replayed
from support.replay import write_replay

from lmc.agent import Interpreter
from lmc.computer import Computer


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def computer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computer]:
    """Real kernels, started once per test module (a kernel takes seconds to start)."""
    with Computer(cwd=tmp_path_factory.mktemp("work")) as shared:
        yield shared


@pytest.fixture
def make_interpreter(
    tiny_model: Path, tmp_path: Path, computer: Computer
) -> Iterator[MakeInterpreter]:
    """``make(completions, **kwargs)``: an Interpreter whose model replays ``completions``."""
    from lmc.backends import BackendConfig, open_backend

    made: list[Interpreter] = []

    def make(
        completions: Sequence[str], *, context_size: int = 8192, **kwargs: Any
    ) -> tuple[Interpreter, RecordingBackend]:
        replay = write_replay(tmp_path / f"replay{len(made)}.txt", completions)
        config = BackendConfig(model=str(tiny_model), replay=str(replay), context_size=context_size)
        backend = RecordingBackend(open_backend(config))
        kwargs.setdefault("computer", computer)
        kwargs.setdefault("db_path", tmp_path / "conversations.db")
        interpreter = Interpreter(backend=backend, **kwargs)
        made.append(interpreter)
        return interpreter, backend

    yield make
    for interpreter in made:
        interpreter.close()
        interpreter.backend.close()


@pytest.fixture
def replayed(tiny_model: Path, tmp_path: Path) -> Iterator[Replayed]:
    """``build(*completions, **settings)``: an Interpreter of its own (its own kernels) on the
    tiny model replaying ``completions``, auto-run unless told, with a work folder and a
    database in ``tmp_path``; every one closed at the end."""
    made: list[Interpreter] = []

    def build(*completions: str, **settings: Any) -> Interpreter:
        replay = write_replay(tmp_path / f"replay{len(made)}.txt", completions)
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        settings.setdefault("auto_run", True)
        interpreter = Interpreter(
            model=str(tiny_model),
            replay=replay,
            db_path=tmp_path / "c.db",
            workdir=work,
            **settings,
        )
        made.append(interpreter)
        return interpreter

    yield build
    for interpreter in made:
        interpreter.close()
