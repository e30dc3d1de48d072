"""ACP fixtures: an isolated home for lmc, and replay files (as the CLI tests have)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.replay import write_replay


@pytest.fixture
def lmc_env(tmp_path: Path) -> dict[str, str]:
    """lmc's files under tmp_path (an empty config file, the database, the cache)."""
    config = tmp_path / "config" / "lmc" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.touch()
    return {
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LMC_CONFIG": str(config),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "NO_COLOR": "1",
    }


@pytest.fixture
def replay(tmp_path: Path) -> Callable[..., Path]:
    """Write a replay file of completions and return its path."""
    counter = iter(range(1000))

    def make(*completions: str) -> Path:
        return write_replay(tmp_path / f"replay-{next(counter)}.txt", completions)

    return make
