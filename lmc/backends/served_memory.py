"""How large a ``num_ctx`` the machine serving Ollama holds: its KV cache must fit there.

Ollama allocates the KV cache by ``num_ctx`` when it loads the model, so lmc never asks for
one whose cache cannot fit the machine. The cost is Ollama's own estimate for gpt-oss
(ollama/ollama v0.12.6 ``fs/ggml/ggml.go`` ``GraphSize``, case ``"gptoss", "gpt-oss"``):
each layer holds ``(key_length + value_length) x head_count_kv x 2`` bytes a token (f16,
``kvCacheBytesPerElement``'s default: the server does not say when ``OLLAMA_KV_CACHE_TYPE``
makes it smaller, so the figure is then on the safe side); the even layers are sliding-window
ones (``model/models/gptoss/model.go``: ``c.SetLayerType(i % 2)``, ``NewSWAMemCache(window,
4096, ...)``) and cost ``4096 + 512`` tokens (its memory of 4,096 and the batch of 512,
``OLLAMA_NUM_PARALLEL`` taken as its default 1) whatever the context; the odd layers cost the
whole context. Other architectures count every layer at the whole context. The keys are
``/api/show``'s ``model_info["<arch>.block_count"]``, ``.attention.head_count_kv``,
``.attention.key_length``, ``.attention.value_length`` and ``.attention.sliding_window``.

The memory is that of this machine when the server is on it (a loopback address):
``MemAvailable`` plus the free memory of its NVIDIA GPU, read once when lmc starts (what a
model Ollama already holds takes is not counted back, though a reload frees it: on the safe
side). The cache gets at most half of it (the weights, Ollama's compute graph and everything
else need the rest). For a server elsewhere nothing says what it has free (``/api/ps`` gives
only what the model already takes), so nothing caps ``num_ctx`` there, and the source says so.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = ["KvCost", "fitting_context", "kv_cost", "serving_memory"]

#: f16 cells, Ollama's default cache type.
KV_CELL_BYTES: Final = 2
#: What a sliding-window layer of gpt-oss holds in Ollama's estimate: 4,096 + a batch of 512.
SLIDING_TOKENS: Final = 4096 + 512
#: The share of the free memory the KV cache may take.
KV_SHARE: Final = 0.5
#: Never capped below Ollama's own default context.
FLOOR: Final = 4096
_GPT_OSS: Final = frozenset({"gptoss", "gpt-oss"})


@dataclass(frozen=True, slots=True)
class KvCost:
    """The KV cache's bytes: ``per_token`` for each token of context, plus ``fixed``."""

    per_token: int
    fixed: int = 0

    def bytes_for(self, context: int) -> int:
        return self.per_token * context + self.fixed


def _number(info: Mapping[str, Any], key: str) -> int:
    value = info.get(key)
    if isinstance(value, list):  # per-layer values: the largest, as Ollama's estimate takes
        value = max((v for v in value if isinstance(v, int)), default=0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def kv_cost(info: Mapping[str, Any]) -> KvCost | None:
    """The KV cache's cost from ``/api/show``'s ``model_info``; None when it does not say."""
    arch = info.get("general.architecture")
    if not isinstance(arch, str):
        return None
    layers = _number(info, f"{arch}.block_count")
    heads_kv = _number(info, f"{arch}.attention.head_count_kv")
    heads = _number(info, f"{arch}.attention.head_count")
    head_dim = _number(info, f"{arch}.embedding_length") // heads if heads else 0
    key = _number(info, f"{arch}.attention.key_length") or head_dim
    value = _number(info, f"{arch}.attention.value_length") or head_dim
    if not (layers and heads_kv and key and value):
        return None
    per_layer = (key + value) * heads_kv * KV_CELL_BYTES
    if arch in _GPT_OSS and _number(info, f"{arch}.attention.sliding_window"):
        sliding = (layers + 1) // 2  # the even ones
        return KvCost(per_layer * (layers - sliding), per_layer * sliding * SLIDING_TOKENS)
    return KvCost(per_layer * layers)


def _is_loopback(root: str) -> bool:
    host = urlsplit(root).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serving_memory(root: str) -> int | None:
    """Bytes free on the machine serving at ``root``: None when it is not this one (or this
    one says nothing); never fails."""
    if not _is_loopback(root):
        return None
    from lmc.backends._context import _gpu_free, _ram_available

    total = (_ram_available() or 0) + (_gpu_free() or 0)
    return total or None


def _size(n: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def fitting_context(cost: KvCost, memory: int, trained: int) -> tuple[int, str] | None:
    """The largest context up to ``trained`` whose KV cache takes at most half of ``memory``
    (``trained`` itself, else a power of two, never below 4,096), and one line saying so;
    None when ``trained`` fits."""
    budget = int(memory * KV_SHARE)
    if cost.bytes_for(trained) <= budget:
        return None
    size = FLOOR
    while size * 2 < trained and cost.bytes_for(size * 2) <= budget:
        size *= 2
    size = min(size, trained)
    line = (
        f"capped at {size:,} by this machine's memory: the KV cache (f16, "
        f"{_size(cost.per_token)} a token) gets at most half of the {_size(memory)} free"
    )
    return size, line
