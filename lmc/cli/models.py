"""``lmc models``: the GGUF files lmc can use without downloading anything."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from lmc.config import data_dir

__all__ = ["ModelFile", "find_models", "list_models"]


@dataclass(frozen=True, slots=True)
class ModelFile:
    """One GGUF file and the name to pass to ``--model``."""

    name: str
    path: Path
    size: int
    source: str  # "local" | "hf"


def _local(directory: Path) -> list[ModelFile]:
    if not directory.is_dir():
        return []
    return [
        ModelFile(str(path), path, path.stat().st_size, "local")
        for path in sorted(directory.rglob("*.gguf"))
        if path.is_file()
    ]


def _hugging_face() -> tuple[list[ModelFile], str | None]:
    """GGUF files in the Hugging Face cache, and a warning when the cache cannot be read."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound, CorruptedCacheException

    try:
        info = scan_cache_dir()
    except CacheNotFound:
        return [], None
    except (CorruptedCacheException, OSError) as exc:
        return [], f"cannot read the Hugging Face cache: {exc}"
    found: dict[str, ModelFile] = {}
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        for revision in repo.revisions:
            for file in revision.files:
                if file.file_name.endswith(".gguf"):
                    name = f"hf:{repo.repo_id}:{file.file_path.relative_to(revision.snapshot_path)}"
                    found[name] = ModelFile(name, file.file_path, file.size_on_disk, "hf")
    return sorted(found.values(), key=lambda m: m.name), None


def find_models() -> tuple[list[ModelFile], list[str]]:
    """Every GGUF file found, local ones first, and any warnings."""
    hf, warning = _hugging_face()
    return _local(data_dir() / "models") + hf, [warning] if warning else []


def _size(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def list_models() -> int:
    models, warnings = find_models()
    for warning in warnings:
        sys.stderr.write(f"lmc: {warning}\n")
    if not models:
        sys.stderr.write(
            f"lmc: no GGUF models found in {data_dir() / 'models'} or the Hugging Face cache\n"
            "lmc: hint: `lmc` downloads gpt-oss-20b on first use, or pass --model FILE.gguf\n"
        )
        return 0
    width = max(len(m.name) for m in models)
    for model in models:
        sys.stdout.write(f"{model.name:<{width}}  {_size(model.size):>9}  {model.path}\n")
    return 0
