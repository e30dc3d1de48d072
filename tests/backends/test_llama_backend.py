"""LlamaCppBackend on the tiny gpt-oss model: real llama.cpp, real sampler, no mocks."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.backend_testing import DEVELOPER, SYSTEM, MakeBackend, user_prompt

from lmc.backends import BackendConfig, Piece, SamplingSettings, StopReason, open_backend
from lmc.backends.base import Generation
from lmc.errors import BackendError, ContextOverflowError
from lmc.harmony import tokens

CALL_COMPLETION = (
    "<|channel|>analysis<|message|>Need to run code.<|end|>"
    "<|start|>assistant<|channel|>commentary to=python <|constrain|>code<|message|>print(1)<|call|>"
)
FINAL_COMPLETION = "<|channel|>final<|message|>It printed 1.<|return|>"


def text_of(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces)


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_replay_emits_exactly_the_script(make_backend: MakeBackend, temperature: float) -> None:
    backend = make_backend([CALL_COMPLETION, FINAL_COMPLETION])
    settings = SamplingSettings(temperature=temperature)
    first = backend.generate(user_prompt("Run print(1)"), settings)
    pieces = list(first)
    assert text_of(pieces) == CALL_COMPLETION
    assert first.stop_reason is StopReason.CALL
    assert pieces[-1] == Piece(tokens.CALL, special=True)

    prompt = user_prompt("Run print(1)") + CALL_COMPLETION
    prompt += (
        "<|start|>python to=assistant<|channel|>commentary<|message|>1<|end|><|start|>assistant"
    )
    second = backend.generate(prompt, settings)
    pieces = list(second)
    assert text_of(pieces) == FINAL_COMPLETION
    assert second.stop_reason is StopReason.RETURN
    assert pieces[-1] == Piece(tokens.RETURN, special=True)


def test_special_tokens_are_markers_never_text(make_backend: MakeBackend) -> None:
    backend = make_backend([CALL_COMPLETION])
    pieces = list(backend.generate(user_prompt("x")))
    specials = [p.text for p in pieces if p.special]
    assert specials == [
        tokens.CHANNEL, tokens.MESSAGE, tokens.END, tokens.START,
        tokens.CHANNEL, tokens.CONSTRAIN, tokens.MESSAGE, tokens.CALL,
    ]  # fmt: skip
    assert all("<|" not in p.text for p in pieces if not p.special)


def test_end_does_not_stop_generation(make_backend: MakeBackend) -> None:
    """<|end|> closes the analysis message; sampling goes on to the <|call|>."""
    backend = make_backend([CALL_COMPLETION])
    generation = backend.generate(user_prompt("x"))
    pieces = list(generation)
    assert Piece(tokens.END, special=True) in pieces
    assert generation.stop_reason is StopReason.CALL


def test_utf8_split_across_tokens_is_held_back(make_backend: MakeBackend) -> None:
    # The tiny vocabulary is byte-level: each of these characters is 2-4 byte tokens.
    completion = "<|channel|>final<|message|>é中🎉ok<|return|>"
    backend = make_backend([completion])
    generation = backend.generate(user_prompt("x"))
    pieces = list(generation)
    texts = [p.text for p in pieces if not p.special]
    assert "é" in texts and "中" in texts and "🎉" in texts
    assert all("\ufffd" not in t for t in texts)
    assert generation.completion_tokens > len(pieces)  # several tokens made one piece
    assert text_of(pieces) == completion


def test_kv_cache_reuse_evaluates_only_the_suffix(make_backend: MakeBackend) -> None:
    backend = make_backend([CALL_COMPLETION, FINAL_COMPLETION], prefix_cache=False)
    prompt1 = user_prompt("Run print(1)")
    first = backend.generate(prompt1)
    list(first)
    assert first.prompt_tokens_evaluated == first.prompt_tokens == backend.count_tokens(prompt1)

    tool_result = "<|start|>python to=assistant<|channel|>commentary<|message|>1<|end|>"
    prompt2 = prompt1 + CALL_COMPLETION + tool_result + "<|start|>assistant"
    second = backend.generate(prompt2)
    list(second)
    assert second.prompt_tokens == backend.count_tokens(prompt2)
    # New tokens: the tool result, <|start|>assistant, and the <|call|> sampled last time
    # (a sampled token enters the cache with the next prompt).
    suffix = tool_result + "<|start|>assistant"
    assert second.prompt_tokens_evaluated == backend.count_tokens(suffix) + 1

    # The same prompt again: only its last token is evaluated (to get fresh logits).
    backend.replay = None
    again = backend.generate(prompt2, SamplingSettings(max_tokens=1))
    list(again)
    assert again.prompt_tokens_evaluated == 1


def test_a_diverging_prompt_is_evaluated_from_the_divergence(make_backend: MakeBackend) -> None:
    backend = make_backend(prefix_cache=False)
    list(backend.generate(user_prompt("first question"), SamplingSettings(max_tokens=2)))
    other = user_prompt("other question")
    generation = backend.generate(other, SamplingSettings(max_tokens=2))
    list(generation)
    shared = backend.count_tokens(f"{SYSTEM}{DEVELOPER}<|start|>user<|message|>")
    assert generation.prompt_tokens_evaluated == generation.prompt_tokens - shared


def test_sampled_ids_are_reused_when_history_is_re_rendered(make_backend: MakeBackend) -> None:
    """Free sampling (random bytes, not canonical BPE): the next prompt still hits the cache."""
    backend = make_backend(prefix_cache=False)
    prompt = user_prompt("say anything")
    generation = backend.generate(prompt, SamplingSettings(max_tokens=12, seed=3))
    pieces = list(generation)
    produced = text_of(pieces)
    if "\ufffd" in produced:  # random bytes that are not UTF-8 cannot be re-rendered as-is
        produced = ""
    follow = prompt + produced + "<|end|><|start|>user<|message|>more<|end|><|start|>assistant"
    nxt = backend.generate(follow, SamplingSettings(max_tokens=1))
    list(nxt)
    new = backend.count_tokens("<|end|><|start|>user<|message|>more<|end|><|start|>assistant")
    if produced:
        assert nxt.prompt_tokens_evaluated == new + 1  # + the last sampled token
    else:
        assert nxt.prompt_tokens_evaluated <= generation.completion_tokens + new + 1


def test_prefix_state_is_written_then_reused_by_a_new_process_backend(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    cache = tmp_path / "states"
    prompt = user_prompt("hello")
    prefix_tokens = make_backend(prefix_cache=False).count_tokens(SYSTEM + DEVELOPER)

    cold = make_backend([FINAL_COMPLETION], cache_dir=cache)
    first = cold.generate(prompt)
    assert text_of(list(first)) == FINAL_COMPLETION
    assert cold.prefix_cache_writes == 1 and cold.prefix_cache_hits == 0
    files = list(cache.glob("*.state"))
    assert len(files) == 1
    assert first.prompt_tokens_evaluated == first.prompt_tokens

    warm = make_backend([FINAL_COMPLETION], cache_dir=cache)
    second = warm.generate(prompt)
    assert text_of(list(second)) == FINAL_COMPLETION
    assert warm.prefix_cache_hits == 1 and warm.prefix_cache_writes == 0
    assert second.prompt_tokens_evaluated == second.prompt_tokens - prefix_tokens


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_corrupt_prefix_state_file_is_ignored_and_rebuilt(
    make_backend: MakeBackend, tmp_path: Path, damage: str
) -> None:
    cache = tmp_path / "states"
    prompt = user_prompt("hello")
    list(make_backend([FINAL_COMPLETION], cache_dir=cache).generate(prompt))
    (state,) = cache.glob("*.state")
    data = bytearray(state.read_bytes())
    if damage == "flip":
        data[-10] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"not a state file at all")
    state.write_bytes(bytes(data))

    backend = make_backend([FINAL_COMPLETION], cache_dir=cache)
    generation = backend.generate(prompt)
    assert text_of(list(generation)) == FINAL_COMPLETION
    assert backend.prefix_cache_hits == 0 and backend.prefix_cache_writes == 1
    assert generation.prompt_tokens_evaluated == generation.prompt_tokens
    third = make_backend([FINAL_COMPLETION], cache_dir=cache)
    list(third.generate(prompt))
    assert third.prefix_cache_hits == 1


def test_cancel_stops_within_a_token_and_the_backend_stays_usable(
    make_backend: MakeBackend,
) -> None:
    long = "<|channel|>final<|message|>" + "abcdefghij" * 20 + "<|return|>"
    backend = make_backend([long, FINAL_COMPLETION])
    cancel = threading.Event()
    generation = backend.generate(user_prompt("x"), cancel=cancel)
    seen = []
    for piece in generation:
        seen.append(piece)
        if len(seen) == 5:
            cancel.set()
    assert len(seen) == 5
    assert generation.stop_reason is StopReason.CANCELLED

    following = backend.generate(user_prompt("again"))
    assert text_of(list(following)) == FINAL_COMPLETION
    assert following.stop_reason is StopReason.RETURN


def test_cancel_from_another_thread(make_backend: MakeBackend) -> None:
    long = "<|channel|>final<|message|>" + "z" * 900 + "<|return|>"
    backend = make_backend([long, FINAL_COMPLETION], context_size=2048)
    cancel = threading.Event()
    generation = backend.generate(user_prompt("x"), cancel=cancel)
    threading.Timer(0.2, cancel.set).start()
    count = 0
    for _ in generation:  # a slow consumer: at least 0.9 s for the whole completion
        count += 1
        time.sleep(0.001)
    assert generation.stop_reason is StopReason.CANCELLED
    assert 0 < count < 900
    usable = backend.generate(user_prompt("y"))
    assert text_of(list(usable)) == FINAL_COMPLETION


def test_context_overflow_is_an_error_naming_both_sizes(make_backend: MakeBackend) -> None:
    backend = make_backend(context_size=256)
    prompt = user_prompt("word " * 400)
    with pytest.raises(ContextOverflowError) as info:
        backend.generate(prompt)
    size = backend.count_tokens(prompt)
    assert info.value.prompt_tokens == size and info.value.context_size == 256
    assert str(size) in str(info.value) and "256" in str(info.value)
    ok = backend.generate(user_prompt("short"), SamplingSettings(max_tokens=2))
    list(ok)
    assert ok.stop_reason is StopReason.MAX_TOKENS


def test_generation_stops_when_the_context_is_full(make_backend: MakeBackend) -> None:
    """The model is made to write an answer longer than the context has room for."""
    endless = "<|channel|>final<|message|>" + "abcdefghij " * 300 + "<|return|>"
    backend = make_backend([endless], context_size=256)
    prompt = user_prompt("x" * 150)
    generation = backend.generate(prompt, SamplingSettings(max_tokens=10_000))
    written = text_of(list(generation))
    assert generation.stop_reason is StopReason.CONTEXT_FULL
    assert generation.prompt_tokens + generation.completion_tokens == 257
    assert written and endless.startswith(written) and written != endless


def test_max_tokens(make_backend: MakeBackend) -> None:
    backend = make_backend([FINAL_COMPLETION])
    generation = backend.generate(user_prompt("x"), SamplingSettings(max_tokens=3))
    pieces = list(generation)
    assert generation.completion_tokens == 3
    assert generation.stop_reason is StopReason.MAX_TOKENS
    assert text_of(pieces) == "<|channel|>fin"  # f, in (a merge)


def test_running_out_of_replay_is_a_clear_error(make_backend: MakeBackend) -> None:
    backend = make_backend([FINAL_COMPLETION])
    list(backend.generate(user_prompt("x")))
    with pytest.raises(BackendError, match="no completion left"):
        backend.generate(user_prompt("y"))


def test_count_tokens_parses_markers(make_backend: MakeBackend) -> None:
    backend = make_backend()
    assert backend.count_tokens("<|start|>") == 1
    assert backend.count_tokens("<|start|>user<|message|>") == 5  # u s er
    assert backend.count_tokens("é") == 2


def test_token_lengths_read_markers_as_text_and_split_characters(
    make_backend: MakeBackend,
) -> None:
    """What the browser sizes views with, as OpenAI's reference does (tiktoken's
    ``len(decode([token]))`` with ``disallowed_special=()``)."""
    backend = make_backend()
    assert sum(backend.token_lengths("hello world")) == 11
    assert backend.token_lengths("<|call|>") == [1] * 8  # text, not the marker
    # ... except five markers that llama.cpp parses in a gpt-oss vocabulary even when asked
    # not to (<|start|>, <|channel|>, <|message|>, <|constrain|>, <|end|>): one token each,
    # where the reference reads their characters.
    assert backend.token_lengths("<|start|>") == [9]
    assert backend.token_lengths("é") == [1, 1]  # two byte tokens: a replacement character each
    assert backend.token_lengths("") == []


def test_open_backend_with_a_replay_file(tiny_model: Path, tmp_path: Path) -> None:
    from support.replay import write_replay

    replay = write_replay(tmp_path / "session.txt", [CALL_COMPLETION, FINAL_COMPLETION])
    config = BackendConfig(model=str(tiny_model), replay=str(replay), context_size=512, seed=1)
    with open_backend(config) as backend:
        first = backend.generate(user_prompt("x"))
        assert text_of(list(first)) == CALL_COMPLETION
        second = backend.generate(user_prompt("y"))
        assert text_of(list(second)) == FINAL_COMPLETION


def test_importing_lmc_backends_does_not_import_llama_cpp() -> None:
    code = (
        "import sys, lmc.backends, lmc.backends.base;"
        "print('llama_cpp' in sys.modules, 'httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_ctrl_c_inside_a_sampler_stage_reaches_the_caller(
    make_backend: MakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt raised while llama.cpp runs a Python sampler stage (a ctypes
    callback, which cannot pass exceptions through C) is raised once sampling returns."""
    from lmc.backends import llama

    real_forcing = llama._forcing

    def forcing_that_is_interrupted(
        forced: list[int], generation: Generation
    ) -> Callable[[object], None]:
        apply = real_forcing(forced, generation)

        def stage(cur_p: object) -> None:
            if generation.completion_tokens == 10:
                raise KeyboardInterrupt  # where a Ctrl-C lands when it hits the callback
            apply(cur_p)

        return stage

    monkeypatch.setattr(llama, "_forcing", forcing_that_is_interrupted)
    long = "<|channel|>final<|message|>" + "abcdefghij" * 20 + "<|return|>"
    backend = make_backend([long, FINAL_COMPLETION])
    seen: list[Piece] = []
    with pytest.raises(KeyboardInterrupt):
        seen.extend(backend.generate(user_prompt("x")))
    assert len(seen) < 12, "the model went on writing after the interrupt"
