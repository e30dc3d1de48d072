"""Fixtures for the backend tests: backends on the tiny model, caches kept in tmp dirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lmc.backends.base import BackendConfig
from lmc.backends.llama import LlamaCppBackend
from lmc.backends.replay import ReplayScript


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes into the user's real cache directory."""
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "lmc-cache"))


@pytest.fixture
def make_backend(tiny_model: Path, tmp_path: Path) -> Iterator[Callable[..., LlamaCppBackend]]:
    """Build LlamaCppBackends on the tiny model; each is closed after the test."""
    made: list[LlamaCppBackend] = []

    def make(
        completions: Sequence[str] | None = None,
        *,
        cache_dir: Path | None = None,
        **config: Any,
    ) -> LlamaCppBackend:
        settings = {"context_size": 1024, "seed": 7, "threads": 1, **config}
        replay = ReplayScript(completions) if completions is not None else None
        backend = LlamaCppBackend(
            tiny_model,
            BackendConfig(**settings),
            replay=replay,
            cache_dir=cache_dir or tmp_path / "prefix-states",
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()
