"""The tiny gpt-oss GGUF: what llama.cpp's gpt-oss loader expects, under 1 MB."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest


@pytest.fixture(scope="module")
def reader(tiny_model: Path) -> gguf.GGUFReader:
    return gguf.GGUFReader(tiny_model)


def field(reader: gguf.GGUFReader, key: str) -> object:
    return reader.fields[key].contents()


def test_small(tiny_model: Path) -> None:
    assert tiny_model.stat().st_size < 1_000_000


def test_architecture_and_tokenizer_keys(reader: gguf.GGUFReader) -> None:
    assert field(reader, "general.architecture") == "gpt-oss"
    assert field(reader, "tokenizer.ggml.model") == "gpt2"
    assert field(reader, "tokenizer.ggml.pre") == "gpt-4o"
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    assert isinstance(tokens, list) and isinstance(types, list)
    assert len(set(tokens[:256])) == 256  # the 256 bytes, byte-level spelled
    assert tokens[ord("a")] == "a" and tokens[ord(" ")] == "Ġ"
    merges = field(reader, "tokenizer.ggml.merges")
    assert isinstance(merges, list) and len(merges) >= 1
    for marker in (
        "<|start|>",
        "<|message|>",
        "<|channel|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|constrain|>",
    ):
        assert types[tokens.index(marker)] == gguf.TokenType.CONTROL
    bos, eos = (
        field(reader, "tokenizer.ggml.bos_token_id"),
        field(reader, "tokenizer.ggml.eos_token_id"),
    )
    assert isinstance(bos, int) and isinstance(eos, int)
    assert tokens[bos] == "<|startoftext|>"
    assert tokens[eos] == "<|return|>"


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("gpt-oss.block_count", gguf.GGUFValueType.UINT32),
        ("gpt-oss.context_length", gguf.GGUFValueType.UINT32),
        ("gpt-oss.embedding_length", gguf.GGUFValueType.UINT32),
        ("gpt-oss.attention.head_count", gguf.GGUFValueType.UINT32),
        ("gpt-oss.attention.head_count_kv", gguf.GGUFValueType.UINT32),
        ("gpt-oss.attention.sliding_window", gguf.GGUFValueType.UINT32),
        ("gpt-oss.expert_count", gguf.GGUFValueType.UINT32),
        ("gpt-oss.expert_used_count", gguf.GGUFValueType.UINT32),
        ("gpt-oss.expert_feed_forward_length", gguf.GGUFValueType.UINT32),
        ("gpt-oss.attention.layer_norm_rms_epsilon", gguf.GGUFValueType.FLOAT32),
        ("gpt-oss.rope.freq_base", gguf.GGUFValueType.FLOAT32),
        ("tokenizer.ggml.bos_token_id", gguf.GGUFValueType.UINT32),
        ("tokenizer.ggml.eos_token_id", gguf.GGUFValueType.UINT32),
    ],
)
def test_key_types(reader: gguf.GGUFReader, key: str, kind: gguf.GGUFValueType) -> None:
    assert reader.fields[key].types == [kind]


def test_exactly_the_tensors_of_the_gpt_oss_loader(reader: gguf.GGUFReader) -> None:
    arch = gguf.MODEL_ARCH.GPT_OSS
    n_layer = field(reader, "gpt-oss.block_count")
    assert isinstance(n_layer, int)
    with_bias = {
        gguf.MODEL_TENSOR.ATTN_Q, gguf.MODEL_TENSOR.ATTN_K, gguf.MODEL_TENSOR.ATTN_V,
        gguf.MODEL_TENSOR.ATTN_OUT, gguf.MODEL_TENSOR.FFN_GATE_INP, gguf.MODEL_TENSOR.FFN_GATE_EXP,
        gguf.MODEL_TENSOR.FFN_UP_EXP, gguf.MODEL_TENSOR.FFN_DOWN_EXP,
    }  # fmt: skip
    expected = set()
    for tensor in gguf.MODEL_TENSORS[arch]:
        name = gguf.TENSOR_NAMES[tensor]
        for bid in range(n_layer) if "{bid}" in name else [None]:
            base = name.format(bid=bid)
            expected.add(f"{base}.weight")
            if tensor in with_bias:
                expected.add(f"{base}.bias")
    assert {t.name for t in reader.tensors} == expected


def test_llama_cpp_loads_it_and_parses_the_markers(tiny_model: Path) -> None:
    import llama_cpp

    llm = llama_cpp.Llama(str(tiny_model), n_ctx=64, verbose=False)
    try:
        ids = llm.tokenize(b"<|start|>assistant<|channel|>", add_bos=False, special=True)
        assert len(ids) > 2
        assert llm.detokenize([ids[0]], special=True) == b"<|start|>"
        assert llm.tokenize(b"the", add_bos=False, special=True) != list(b"the")  # a merge
    finally:
        llm.close()
