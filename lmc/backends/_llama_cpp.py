"""The one module that touches llama-cpp-python beyond ``Llama``'s documented methods.

lmc needs more than the high-level API gives: the context's KV cache (keep a prefix, drop
the rest), sequence state (the prefix cache on disk), sampler chains with Python stages
(replay, argument grammars), token pieces with special tokens, and quiet logs. Those live
in llama-cpp-python's private objects (``Llama._ctx``, ``Llama._model``,
``llama_cpp._internals``, ``llama_cpp._logger``) and its ctypes bindings of llama.cpp's C API,
which change between releases. So they are reached here and nowhere else, the dependency
is pinned below 0.4, and ``tests/backends/test_llama_cpp_adapter.py`` checks each one
against the installed version: an upgrade that moves one fails there, by name.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = [
    "candidates",
    "drop_kv_after",
    "json_schema_to_gbnf",
    "llama_module",
    "new_sampler",
    "open_model",
    "restore_state",
    "route_logs",
    "sample",
    "sampler_accept",
    "sampler_apply",
    "sampler_free",
    "sampler_init_grammar",
    "snapshot_state",
    "supports_gpu_offload",
    "token_piece",
    "version",
    "vocab",
    "vocab_size",
]


def llama_module() -> ModuleType:
    import llama_cpp

    return llama_cpp


def version() -> str:
    return str(getattr(llama_module(), "__version__", "?"))


def supports_gpu_offload() -> bool:
    """Whether this llama.cpp build offloads layers to a GPU."""
    return bool(llama_module().llama_supports_gpu_offload())


_SILENT_LOG: list[Any] = []  # the ctypes callback must outlive every call into llama.cpp


def route_logs(*, verbose: bool) -> None:
    """llama.cpp logs to stderr only when verbose (its warnings would garble the terminal)."""
    lib = llama_module()
    from llama_cpp import _logger

    if verbose:
        lib.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
        return
    if not _SILENT_LOG:
        _SILENT_LOG.append(lib.llama_log_callback(lambda level, text, data: None))
    lib.llama_log_set(_SILENT_LOG[0], ctypes.c_void_p(0))


def vocab(llm: Any) -> Any:
    """The model's ``llama_vocab *`` (for pieces and grammars)."""
    return llm._model.vocab


def vocab_size(vocab_ptr: Any) -> int:
    return int(llama_module().llama_vocab_n_tokens(vocab_ptr))


def token_piece(vocab_ptr: Any, token: int, *, special: bool) -> bytes:
    """A token's bytes; with ``special``, control tokens as their text (``<|start|>``)."""
    lib = llama_module()
    buffer = ctypes.create_string_buffer(64)
    n = lib.llama_token_to_piece(vocab_ptr, token, buffer, 64, 0, special)
    if n < 0:
        buffer = ctypes.create_string_buffer(-n)
        n = lib.llama_token_to_piece(vocab_ptr, token, buffer, -n, 0, special)
    return buffer.raw[:n]


def drop_kv_after(llm: Any, keep: int) -> int:
    """Keep the first ``keep`` cells of the KV cache (all of it when llama.cpp cannot cut a
    sequence there); returns how many tokens the cache now holds."""
    if keep < llm.n_tokens and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
        llm._ctx.kv_cache_clear()
        keep = 0
    llm.n_tokens = min(keep, llm.n_tokens)
    return int(llm.n_tokens)


def snapshot_state(llm: Any) -> bytes | None:
    """The KV state of sequence 0 (llama.cpp's own format), None when it wrote nothing."""
    lib, ctx = llama_module(), llm.ctx
    size = lib.llama_state_seq_get_size(ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = lib.llama_state_seq_get_data(ctx, buffer, size, 0)
    return ctypes.string_at(buffer, written) if written else None


def restore_state(llm: Any, payload: bytes, ids: Sequence[int]) -> bool:
    """Replace the KV cache with ``payload`` (the state of ``ids``); False, and an empty
    cache, when llama.cpp refuses it."""
    lib = llama_module()
    llm._ctx.kv_cache_clear()
    llm.n_tokens = 0
    buffer = (ctypes.c_uint8 * len(payload)).from_buffer_copy(payload)
    if not lib.llama_state_seq_set_data(llm.ctx, buffer, len(payload), 0):
        llm._ctx.kv_cache_clear()
        return False
    llm.input_ids[: len(ids)] = ids
    llm.n_tokens = len(ids)
    return True


def new_sampler() -> Any:
    """An empty sampler chain (``add_custom``, ``add_greedy``, ``add_top_p``, ``add_temp``,
    ``add_dist``, ``close``)."""
    from llama_cpp import _internals

    return _internals.LlamaSampler()  # type: ignore[no-untyped-call]


def sample(sampler: Any, llm: Any) -> int:
    """The next token from ``sampler`` over the logits of the last evaluated token."""
    return int(sampler.sample(llm._ctx, -1))


def open_model(**kwargs: Any) -> Any:
    """``llama_cpp.Llama(**kwargs)`` (its errors are the caller's to map)."""
    return llama_module().Llama(**kwargs)


def candidates(cur_p: Any) -> tuple[Any, Any]:
    """The (ids, logits) of a sampler stage's ``llama_token_data_array *`` as writable numpy
    views: ``llama_token_data`` is ``{int32 id; float logit; float p}``, 3 floats a token."""
    import numpy as np

    array = cur_p.contents
    size = int(array.size)
    raw = ctypes.cast(array.data, ctypes.POINTER(ctypes.c_float))
    values = np.ctypeslib.as_array(raw, shape=(size * 3,))
    return values.view(np.int32)[0::3], values[1::3]


def json_schema_to_gbnf(schema_json: str) -> str | None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf as convert

    gbnf: str | None = convert(schema_json)
    return gbnf


def sampler_init_grammar(vocab_ptr: Any, gbnf: str) -> Any:
    """A grammar sampler (a ``llama_sampler *``; falsy when the grammar does not parse)."""
    return llama_module().llama_sampler_init_grammar(vocab_ptr, gbnf.encode(), b"root")


def sampler_apply(sampler_ptr: Any, cur_p: Any) -> None:
    llama_module().llama_sampler_apply(sampler_ptr, cur_p)


def sampler_accept(sampler_ptr: Any, token: int) -> None:
    llama_module().llama_sampler_accept(sampler_ptr, token)


def sampler_free(sampler_ptr: Any) -> None:
    llama_module().llama_sampler_free(sampler_ptr)
