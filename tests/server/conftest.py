"""Server fixtures: lmc's app on a real uvicorn, the tiny model replaying, real kernels.

``serve(*completions, auto_run=..., max_steps=...)`` starts a server whose in-process model
(shared by all its connections) replays ``completions``; every server, model and kernel
started here is ended after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.replay import write_replay
from support.server_testing import TOKEN, LiveServer, Served

from lmc.backends import BackendConfig, open_backend
from lmc.backends.base import Backend
from lmc.cli.serve import computer_factory
from lmc.cli.session import make_interpreter
from lmc.config import Settings
from lmc.server import ServerConfig, create_app


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # where the kernels run the model's code


@pytest.fixture
def serve(tiny_model: Path, tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[tuple[LiveServer, Backend | None]] = []

    def start(
        *completions: str,
        auto_run: bool = False,
        max_steps: int = 20,
        api_base: str | None = None,
        stt_model: str | None = None,
        max_tokens: int | None = None,
        mcp_servers: dict[str, Any] | None = None,
        config_options: dict[str, Any] | None = None,
        block_timeout: float = 30.0,
    ) -> Served:
        replay = None
        if completions:
            replay = str(write_replay(tmp_path / f"replay{len(started)}.txt", completions))
        db_path = tmp_path / "conversations.db"
        settings = Settings(
            model=None if api_base else str(tiny_model),
            api_base=api_base,
            replay=replay,
            auto_run=auto_run,
            max_steps=max_steps,
            db_path=str(db_path),
            stt_model=stt_model,
            max_tokens=max_tokens,
            mcp_servers=dict(mcp_servers or {}),
            block_timeout=block_timeout,
        )
        backend = None
        if api_base is None:
            backend = open_backend(BackendConfig(model=str(tiny_model), replay=replay))
        interpreters: list[Any] = []

        def factory(conversation_id: str | None, view: Backend | None, computer: Any) -> Any:
            interpreter = make_interpreter(
                settings, conversation_id, backend=view, computer=computer
            )
            interpreters.append(interpreter)
            return interpreter

        config = ServerConfig(
            token=TOKEN,
            make_interpreter=factory,
            make_computer=computer_factory(settings),
            shared_backend=backend,
            auto_run=auto_run,
            db_path=db_path,
            **(config_options or {}),
        )
        live = LiveServer(create_app(config))
        started.append((live, backend))
        live.start()
        return Served(live, config, db_path, interpreters)

    try:
        yield start
    finally:
        for live, backend in started:
            live.stop()
            if backend is not None:
                backend.close()
