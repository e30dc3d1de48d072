"""Each llama-cpp-python internal lmc uses (all of them in lmc/backends/_llama_cpp.py), checked
against the installed version with the tiny gpt-oss GGUF: an upgrade that moves or changes
one fails here, by name, instead of somewhere in a generation. And no other module of lmc
imports llama_cpp."""

from __future__ import annotations

import ast
import ctypes
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc.backends import _llama_cpp as llama

LMC = Path(__file__).resolve().parents[2] / "lmc"
START = b"<|start|>"


@pytest.fixture(scope="module")
def llm(tiny_model: Path) -> Iterator[Any]:
    llama.route_logs(verbose=False)
    model = llama.open_model(model_path=str(tiny_model), n_ctx=256, verbose=False, seed=1)
    yield model
    model.close()


def _ids(llm: Any, text: bytes) -> list[int]:
    return list(llm.tokenize(text, add_bos=False, special=True))


def _fresh(llm: Any, text: bytes) -> list[int]:
    """Evaluate ``text`` from an empty cache; its ids."""
    llama.drop_kv_after(llm, 0)
    ids = _ids(llm, text)
    llm.eval(ids)
    return ids


def _greedy(llm: Any) -> int:
    sampler = llama.new_sampler()
    try:
        sampler.add_greedy()
        return llama.sample(sampler, llm)
    finally:
        sampler.close()


def test_the_installed_version_is_inside_the_pin() -> None:
    major, minor, *_ = (int(p) for p in re.findall(r"\d+", llama.version())[:3])
    assert (major, minor) == (0, 3)
    pyproject = (LMC.parent / "pyproject.toml").read_text()
    assert '"llama-cpp-python>=0.3.16,<0.4"' in pyproject


def test_supports_gpu_offload_is_a_bool() -> None:
    assert isinstance(llama.supports_gpu_offload(), bool)


def test_route_logs_silences_llama_cpp(tiny_model: Path, capfd: pytest.CaptureFixture[str]) -> None:
    llama.route_logs(verbose=True)
    llama.open_model(model_path=str(tiny_model), n_ctx=64, verbose=True).close()
    assert "llama" in capfd.readouterr().err  # the loader's log reaches stderr ...
    llama.route_logs(verbose=False)
    llama.open_model(model_path=str(tiny_model), n_ctx=64, verbose=False).close()
    assert capfd.readouterr().err == ""  # ... and is gone when quiet


def test_vocab_pieces_and_size(llm: Any) -> None:
    vocab = llama.vocab(llm)
    (start,) = _ids(llm, START)
    assert llama.token_piece(vocab, start, special=True) == START
    word = _ids(llm, b"the")
    for special in (True, False):
        assert b"".join(llama.token_piece(vocab, t, special=special) for t in word) == b"the"
    assert llama.vocab_size(vocab) == llm.n_vocab() > start


def test_drop_kv_after_keeps_a_prefix(llm: Any) -> None:
    ids = _fresh(llm, b"<|start|>user<|message|>hello there<|end|>")
    assert llm.n_tokens == len(ids)
    assert llama.drop_kv_after(llm, 3) == 3 == llm.n_tokens
    llm.eval(ids[3:])  # the cache continues from the kept prefix
    assert llm.n_tokens == len(ids)


def test_sampler_chain_and_sample(llm: Any) -> None:
    _fresh(llm, b"<|start|>user<|message|>hi")
    first = _greedy(llm)
    assert 0 <= first < llm.n_vocab()
    assert _greedy(llm) == first  # greedy over the same logits


def test_snapshot_and_restore_state(llm: Any) -> None:
    ids = _fresh(llm, b"<|start|>system<|message|>You are lmc.<|end|>")
    expected = _greedy(llm)
    state = llama.snapshot_state(llm)
    assert state
    llama.drop_kv_after(llm, 0)
    assert llama.restore_state(llm, state, ids)
    assert llm.n_tokens == len(ids)
    assert list(llm.input_ids[: len(ids)]) == ids
    llama.drop_kv_after(llm, len(ids) - 1)  # sampling needs the last token's logits again
    llm.eval(ids[-1:])
    assert _greedy(llm) == expected
    assert not llama.restore_state(llm, b"not a state", ids)
    assert llm.n_tokens == 0


def test_candidates_are_writable_views(llm: Any) -> None:
    """A Python stage sees (ids, logits) and what it writes decides the sample."""
    _fresh(llm, b"<|start|>user<|message|>hi")
    seen: list[int] = []
    target = _ids(llm, b"the")[0]

    def stage(cur_p: Any) -> None:
        ids, logits = llama.candidates(cur_p)
        seen.append(len(ids))
        logits[:] = float("-inf")
        logits[list(ids).index(target)] = 0.0

    sampler = llama.new_sampler()
    try:
        sampler.add_custom(stage)
        sampler.add_greedy()
        assert llama.sample(sampler, llm) == target
    finally:
        sampler.close()
    assert seen == [llm.n_vocab()]


def test_grammar_sampler_from_a_json_schema(llm: Any) -> None:
    gbnf = llama.json_schema_to_gbnf('{"type": "integer"}')
    assert gbnf is not None and "root ::=" in gbnf
    grammar = llama.sampler_init_grammar(llama.vocab(llm), gbnf)
    assert grammar
    vocab = llama.vocab(llm)
    _fresh(llm, b"<|start|>user<|message|>hi")
    sampler = llama.new_sampler()
    try:
        sampler.add_custom(lambda cur_p: llama.sampler_apply(grammar, cur_p))
        sampler.add_greedy()
        token = llama.sample(sampler, llm)
        piece = llama.token_piece(vocab, token, special=True)
        assert piece and re.fullmatch(rb"-?[0-9]+", piece), piece
        llama.sampler_accept(grammar, token)
    finally:
        sampler.close()
        llama.sampler_free(grammar)
    assert not llama.sampler_init_grammar(vocab, "root ::= (")  # a broken grammar: falsy


def test_no_other_module_imports_llama_cpp() -> None:
    importers = []
    for path in LMC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[0] == "llama_cpp" for name in names):
                importers.append(path.relative_to(LMC.parent).as_posix())
    assert sorted(set(importers)) == ["lmc/backends/_llama_cpp.py"]
    assert ctypes.sizeof(ctypes.c_float) == 4  # candidates() reads llama_token_data as floats
