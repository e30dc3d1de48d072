"""The default context size: the model's trained context, capped by what the KV cache fits.

The dimensions come from the GGUF file's metadata, read here without loading the model
(a few kilobytes at the start of the file): the trained context, the layers, the KV heads and
their head sizes, and the sliding window. A token of context costs, in the KV cache,
``layers x kv_heads x (key_length + value_length) x 2 bytes`` (f16 cells). gpt-oss alternates
sliding-window and full-attention layers; lmc keeps the sliding-window layers at full size
too (``swa_full``, so that any prefix of the context can be kept between calls), so every
layer counts, and the reason says so.

The memory is what is free where the cache goes: the GPU's (``nvidia-smi``) when layers are
offloaded to an NVIDIA GPU, else RAM (``MemAvailable``), less the model's weights when they
go to the same memory, less a margin for llama.cpp's compute buffers.
"""

from __future__ import annotations

import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from lmc.paths import host_which, neutral_dir

__all__ = ["ContextChoice", "ModelShape", "choose_context", "free_memory", "read_shape"]

GIB: Final = 1024**3
MIB: Final = 1024**2
#: Never below this (a prompt of system, developer and one question fits), unless the model
#: itself was trained on less.
MIN_CONTEXT: Final = 4096
#: Kept free for llama.cpp's compute buffers and everything else.
MARGIN_FRACTION: Final = 0.10
MARGIN_MIN: Final = 512 * MIB
_KV_CELL_BYTES: Final = 2  # f16, llama.cpp's default cache type
_MAGIC: Final = b"GGUF"
# GGUF value types -> struct format of a scalar (8: string, 9: array).
_SCALARS: Final = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}


@dataclass(frozen=True, slots=True)
class ModelShape:
    """What the KV cache's size depends on."""

    name: str
    trained_context: int
    layers: int
    kv_heads: int
    key_length: int
    value_length: int
    sliding_window: int = 0  # 0: no sliding-window layers

    def kv_bytes_per_token(self) -> int:
        return self.layers * self.kv_heads * (self.key_length + self.value_length) * _KV_CELL_BYTES


@dataclass(frozen=True, slots=True)
class ContextChoice:
    """The context size and, in one line, why."""

    size: int
    reason: str


def _read_value(stream: IO[bytes], kind: int) -> Any:
    if kind in _SCALARS:
        fmt = "<" + _SCALARS[kind]
        return struct.unpack(fmt, stream.read(struct.calcsize(fmt)))[0]
    if kind == 8:
        (length,) = struct.unpack("<Q", stream.read(8))
        return stream.read(length).decode("utf-8", "replace")
    if kind == 9:
        item_kind, count = struct.unpack("<IQ", stream.read(12))
        if item_kind in _SCALARS and count > 64:  # long arrays (vocabularies): skipped
            stream.seek(count * struct.calcsize("<" + _SCALARS[item_kind]), os.SEEK_CUR)
            return None
        if item_kind == 8 and count > 64:
            for _ in range(count):
                (length,) = struct.unpack("<Q", stream.read(8))
                stream.seek(length, os.SEEK_CUR)
            return None
        return [_read_value(stream, item_kind) for _ in range(count)]
    raise ValueError(f"unknown GGUF value type {kind}")


def read_metadata(path: Path, wanted: frozenset[str] | None = None) -> dict[str, Any]:
    """The GGUF file's key/value metadata (stops once every ``wanted`` key is read)."""
    out: dict[str, Any] = {}
    with path.open("rb") as stream:
        if stream.read(4) != _MAGIC:
            raise ValueError(f"{path} is not a GGUF file")
        _version, _tensors, count = struct.unpack("<IQQ", stream.read(20))
        for _ in range(count):
            (length,) = struct.unpack("<Q", stream.read(8))
            key = stream.read(length).decode("utf-8", "replace")
            (kind,) = struct.unpack("<I", stream.read(4))
            out[key] = _read_value(stream, kind)
            if wanted is not None and wanted <= out.keys():
                break
    return out


def read_shape(path: Path) -> ModelShape:
    """The model's dimensions from its GGUF metadata; ValueError when they are not there."""
    try:
        meta = read_metadata(path)
    except (OSError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the GGUF metadata of {path}: {exc}") from exc
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise ValueError(f"{path} names no architecture in its metadata")

    def number(key: str, default: int | None = None) -> int:
        value = meta.get(f"{arch}.{key}", default)
        if isinstance(value, list):  # per-layer values: the largest
            value = max(value) if value else default
        if not isinstance(value, int):
            raise ValueError(f"{path} has no {arch}.{key} in its metadata")
        return value

    heads = number("attention.head_count")
    head_dim = number("embedding_length") // max(heads, 1)
    return ModelShape(
        name=str(meta.get("general.name") or path.name),
        trained_context=number("context_length"),
        layers=number("block_count"),
        kv_heads=number("attention.head_count_kv", heads),
        key_length=number("attention.key_length", head_dim),
        value_length=number("attention.value_length", head_dim),
        sliding_window=number("attention.sliding_window", 0),
    )


def _ram_available() -> int | None:
    try:
        with Path("/proc/meminfo").open(encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gpu_free() -> int | None:
    """Free memory of the first NVIDIA GPU, or None (no GPU, or no nvidia-smi)."""
    smi = host_which("nvidia-smi")
    if smi is None:
        return None
    try:
        result = subprocess.run(
            [smi, "--query-gpu=memory.free", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            cwd=neutral_dir(),
        )
        return int(result.stdout.split()[0]) * MIB
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def free_memory(offloaded: bool) -> tuple[int | None, str]:
    """(bytes free where the KV cache goes, what that memory is)."""
    if offloaded:
        gpu = _gpu_free()
        if gpu is not None:
            return gpu, "free GPU memory"
    return _ram_available(), "free RAM"


def _size(n: float) -> str:
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _round_down(tokens: int) -> int:
    return tokens // 1024 * 1024 if tokens >= 1024 else tokens // 256 * 256


def choose_context(
    path: Path,
    *,
    offloaded: bool,
    swa_full: bool = True,
    memory: tuple[int | None, str] | None = None,
) -> ContextChoice:
    """The trained context, capped by the KV cache that fits in free memory."""
    try:
        shape = read_shape(path)
    except ValueError as exc:
        return ContextChoice(8192, f"8,192 tokens: the model's dimensions are unknown ({exc})")
    trained = shape.trained_context
    per_token = shape.kv_bytes_per_token()
    window = ""
    if shape.sliding_window and swa_full:
        window = ", sliding-window layers kept full"
    cost = f"{_size(per_token)} a token{window}"
    free, where = memory if memory is not None else free_memory(offloaded)
    if free is None:
        size = min(trained, 32768)
        return ContextChoice(
            size, f"{size:,} tokens: free memory is unknown (trained context {trained:,})"
        )
    model_bytes = path.stat().st_size
    budget = free - model_bytes - max(MARGIN_MIN, int(free * MARGIN_FRACTION))
    fits = _round_down(max(budget, 0) // max(per_token, 1))
    if fits >= trained:
        return ContextChoice(
            trained,
            f"{trained:,} tokens: {shape.name}'s trained context; its KV cache "
            f"({_size(trained * per_token)}, {cost}) fits in {_size(free)} of {where}",
        )
    size = min(trained, max(fits, MIN_CONTEXT))
    return ContextChoice(
        size,
        f"{size:,} tokens: what the KV cache ({cost}) fits in {_size(free)} of {where} "
        f"after the model ({_size(model_bytes)}); trained context {trained:,}",
    )
