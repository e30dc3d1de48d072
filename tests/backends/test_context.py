"""The default context: the trained context from the GGUF metadata, capped by the KV cache
that fits in free memory (computed from the model's dimensions); ``--context`` wins."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from lmc.backends._context import GIB, MARGIN_MIN, MIN_CONTEXT, choose_context, read_shape
from lmc.backends.llama import LlamaCppBackend

ROOT = Path(__file__).resolve().parents[2]


def _tiny_maker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mtm_ctx", ROOT / "scripts" / "make_tiny_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mtm_ctx"] = module
    spec.loader.exec_module(module)
    return module


def gpt_oss_20b_metadata(path: Path) -> Path:
    """A GGUF holding only gpt-oss-20b's metadata (its real dimensions), no tensors."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "gpt-oss")
    writer.add_name("gpt-oss-20b")
    writer.add_context_length(131072)
    writer.add_embedding_length(2880)
    writer.add_block_count(24)
    writer.add_head_count(64)
    writer.add_head_count_kv(8)
    writer.add_key_length(64)
    writer.add_value_length(64)
    writer.add_sliding_window(128)
    writer.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(5000)])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_the_tiny_models_dimensions_are_read_from_its_metadata(tiny_model: Path) -> None:
    maker = _tiny_maker()
    shape = read_shape(tiny_model)
    default = maker.Shape()
    assert (shape.trained_context, shape.layers, shape.kv_heads, shape.key_length) == (
        maker.CONTEXT_LENGTH,
        default.layers,
        default.heads_kv,
        default.head_dim,
    )
    assert shape.sliding_window == maker.SLIDING_WINDOW


def test_gpt_oss_20b_gets_its_trained_context_when_the_cache_fits(tmp_path: Path) -> None:
    path = gpt_oss_20b_metadata(tmp_path / "meta.gguf")
    shape = read_shape(path)
    # 24 layers x 8 KV heads x (64 + 64) x 2 bytes: 48 KiB a token, 6 GiB for 131,072.
    assert shape.kv_bytes_per_token() == 49152
    choice = choose_context(path, offloaded=False, memory=(20 * GIB, "free RAM"))
    assert choice.size == 131072
    assert "trained context" in choice.reason and "48.0 KiB a token" in choice.reason
    assert "sliding-window layers kept full" in choice.reason


def test_less_free_memory_caps_the_context_at_what_the_cache_fits(tmp_path: Path) -> None:
    path = gpt_oss_20b_metadata(tmp_path / "meta.gguf")
    free = 4 * GIB
    choice = choose_context(path, offloaded=True, memory=(free, "free GPU memory"))
    budget = free - path.stat().st_size - max(MARGIN_MIN, free // 10)
    assert choice.size == budget // 49152 // 1024 * 1024
    assert 60000 < choice.size < 131072
    assert "free GPU memory" in choice.reason and "trained context 131,072" in choice.reason
    tight = choose_context(path, offloaded=False, memory=(600 * 1024**2, "free RAM"))
    assert tight.size == MIN_CONTEXT  # never below a usable minimum


def test_the_context_option_wins(make_backend: Callable[..., LlamaCppBackend]) -> None:
    backend = make_backend(None, context_size=2048)
    assert backend.context_size == 2048
    assert backend.context_reason == "2,048 tokens: as set"


def test_without_one_the_backend_takes_the_fitted_default(
    make_backend: Callable[..., LlamaCppBackend], tiny_model: Path
) -> None:
    backend = make_backend(None, context_size=None)
    assert backend.context_size == read_shape(tiny_model).trained_context
    assert backend.context_reason.startswith(f"{backend.context_size:,} tokens: ")


def test_a_file_without_metadata_falls_back_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(b"not a gguf")
    choice = choose_context(path, offloaded=False)
    assert choice.size == 8192 and "dimensions are unknown" in choice.reason


@pytest.mark.parametrize("free", [None])
def test_unknown_free_memory_is_said(tmp_path: Path, free: int | None) -> None:
    path = gpt_oss_20b_metadata(tmp_path / "meta.gguf")
    choice = choose_context(path, offloaded=False, memory=(free, "free RAM"))
    assert choice.size == 32768 and "free memory is unknown" in choice.reason
