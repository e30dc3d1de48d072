"""Ollama's num_ctx within the serving machine's memory (lmc/backends/served_memory.py).

The KV cache's cost follows Ollama's own estimate for gpt-oss (ollama/ollama v0.12.6
fs/ggml/ggml.go ``GraphSize``: even layers sliding-window at 4,096 + 512 tokens, odd layers at
the context, ``(key_length + value_length) x head_count_kv x 2`` bytes a token each); the
model_info is the stand-in's /api/show (support.served_servers, its keys cited there). The
memory figure is injected; the real reading is checked only for what it must never do.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.served_servers import OLLAMA_MODEL_INFO, stand_in

from lmc.backends import BackendConfig, SamplingSettings
from lmc.backends.ollama import OllamaBackend
from lmc.backends.served import read_served
from lmc.backends.served_memory import KvCost, fitting_context, kv_cost, serving_memory
from lmc.backends.server import apply_served

GIB = 1024**3
LAYER = (64 + 64) * 8 * 2  # bytes a token of one gpt-oss layer, f16


def _free(n: int | None) -> Callable[[str], int | None]:
    """The serving machine's free memory, as given."""
    return lambda _root: n


def test_gpt_oss_20b_costs_its_full_layers_a_token_and_its_sliding_ones_a_fixed_size() -> None:
    cost = kv_cost(OLLAMA_MODEL_INFO)
    assert cost == KvCost(per_token=12 * LAYER, fixed=12 * LAYER * (4096 + 512))
    assert cost.per_token == 24 * 1024  # 24 KiB a token of context
    assert cost.bytes_for(131072) == 12 * LAYER * (131072 + 4608)


def test_gpt_oss_120b_has_36_layers() -> None:
    info = {**OLLAMA_MODEL_INFO, "gptoss.block_count": 36}
    assert kv_cost(info) == KvCost(18 * LAYER, 18 * LAYER * 4608)


def test_other_shapes_count_every_layer_and_missing_dimensions_say_nothing() -> None:
    llama = {
        "general.architecture": "llama",
        "llama.block_count": 32,
        "llama.attention.head_count": 32,
        "llama.attention.head_count_kv": [8, 8, 4],  # per layer: the largest
        "llama.embedding_length": 4096,  # no key/value length: 4,096 / 32 heads
    }
    assert kv_cost(llama) == KvCost(32 * (128 + 128) * 8 * 2)
    assert kv_cost({"general.architecture": "gptoss", "gptoss.block_count": 24}) is None
    assert kv_cost({}) is None


def test_the_context_fits_half_the_memory_in_powers_of_two() -> None:
    cost = kv_cost(OLLAMA_MODEL_INFO)
    assert cost is not None
    assert fitting_context(cost, 64 * GIB, 131072) is None  # the trained context fits
    fitted = fitting_context(cost, 2 * GIB, 131072)  # 1 GiB for the cache: 39,082 tokens
    assert fitted is not None and fitted[0] == 32768
    assert fitted[1].startswith("capped at 32,768 by this machine's memory: the KV cache")
    assert "24.0 KiB a token" in fitted[1] and "2.0 GiB free" in fitted[1]
    tiny = fitting_context(cost, 100 * 1024**2, 131072)  # never below Ollama's default
    assert tiny is not None and tiny[0] == 4096
    trained_small = fitting_context(KvCost(10**9), GIB, 2048)  # nor above the trained size
    assert trained_small is not None and trained_small[0] == 2048


@pytest.mark.parametrize(
    "root", ["http://127.0.0.1:11434", "http://localhost:11434", "http://[::1]:11434"]
)
def test_a_server_on_this_machine_is_given_its_free_memory(root: str) -> None:
    free = serving_memory(root)
    assert free is not None and free > 0  # /proc/meminfo's MemAvailable at least


@pytest.mark.parametrize("root", ["http://192.0.2.7:11434", "https://ollama.example.org"])
def test_a_server_elsewhere_has_no_memory_figure(root: str) -> None:
    assert serving_memory(root) is None


# ------------------------------------------------------------- through the stand-in Ollama


def test_the_served_context_is_capped_by_the_machine_and_says_so() -> None:
    with stand_in("ollama") as (record, _stand):
        config = BackendConfig(api_base=record.root)
        small = read_served(config, "ollama", memory=_free(2 * GIB))
        plenty = read_served(config, "ollama", memory=_free(64 * GIB))
        unknown = read_served(config, "ollama", memory=_free(None))
        chosen = BackendConfig(api_base=record.root, context_size=131072)
        person = read_served(chosen, "ollama", memory=_free(2 * GIB))
    assert (small.size, small.trained, small.sized_by_lmc) == (32768, 131072, True)
    assert small.reason.count("capped at 32,768 by this machine's memory") == 1
    assert plenty.size == 131072 and "capped" not in plenty.reason
    assert unknown.size == 131072
    assert "no memory cap: lmc reads free memory only for a server on this machine" in (
        unknown.source
    )
    assert (person.size, person.source) == (131072, "as set; lmc sends it as num_ctx")


def test_num_ctx_never_grows_past_what_the_machine_holds() -> None:
    """End to end: the backend reads the stand-in, then asks for num_ctx per request."""
    words = "<|start|>user<|message|>{}<|end|><|start|>assistant"
    prompts = [words.format("hi"), words.format("word " * 16000), words.format("word " * 40000)]
    with stand_in("ollama") as (record, stand):
        config = BackendConfig(api_base=record.root, api_style="ollama")
        with OllamaBackend(config) as backend:
            apply_served(backend, config, memory=_free(2 * GIB))
            assert backend.context_size == 32768
            assert "capped at 32,768 by this machine's memory" in backend.context_reason
            for prompt in prompts:
                list(backend.generate(prompt, SamplingSettings(max_tokens=256)))
    assert stand.num_ctx == [8192, 32768, 32768]
