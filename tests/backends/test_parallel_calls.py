"""Several tool calls in one answer: each runs, in order, one a generation.

The servers (``support.recorded_parallel``, which cites each shape) answer with two python
calls at once. The first comes back at once, the second as the answer to the next prompt
without a request, and only then does the conversation go back, with both calls under the
server's ids, each followed by its result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.recorded_parallel import (
    BOTH,
    CODES,
    IDS,
    OUTPUTS,
    PARALLEL,
    PARALLEL_SERVERS,
    ollama_v1_parallel_chat,
    openai_parallel_chat,
)
from support.recorded_servers import REASONING, serving

from lmc.backends import Backend, BackendConfig, SamplingSettings, StopReason, open_backend

ASSISTANT = "<|start|>assistant"
USER = f"<|start|>user<|message|>{PARALLEL}<|end|>"
CALL_TEXT = "<|channel|>analysis to=python code<|message|>{code}<|call|>"


def _ran(code: str, output: str) -> str:
    """A python call and its result, as the agent loop records them."""
    return (
        f"<|start|>assistant to=python<|channel|>analysis code<|message|>{code}<|call|>"
        f"<|start|>python to=assistant<|channel|>analysis<|message|>{output}<|end|>"
    )


def _generate(backend: Backend, prompt: str) -> tuple[StopReason | None, str]:
    generation = backend.generate(prompt, SamplingSettings())
    text = "".join(piece.text for piece in generation)
    return generation.stop_reason, text


def _config(root: str, dialect: str) -> BackendConfig:
    model = "gpt-oss-120b" if dialect == "chat" else None
    return BackendConfig(api_base=root, api_style=dialect, model=model)


def _conversation(dialect: str, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The calls and results a request carries, as (kind, id, code or output)."""
    out: list[tuple[str, str, str]] = []
    if dialect == "responses":
        for item in body["input"]:
            if item.get("type") == "function_call":
                code = json.loads(item["arguments"])["code"]
                out.append(("call", item["call_id"], code))
            elif item.get("type") == "function_call_output":
                out.append(("result", item["call_id"], item["output"]))
        return out
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            if isinstance(arguments, str):
                arguments = json.loads(arguments)
            out.append(("call", call["id"], arguments["code"]))
        if message["role"] == "tool":
            out.append(("result", message["tool_call_id"], message["content"]))
    return out


@pytest.mark.parametrize("dialect", ["chat", "responses", "ollama"])
def test_both_calls_run_in_order_and_go_back_under_their_ids(dialect: str) -> None:
    routes, path = PARALLEL_SERVERS[dialect]
    first_id, second_id = IDS[dialect]
    with serving(routes) as recorded, open_backend(_config(recorded.root, dialect)) as backend:
        stop, text = _generate(backend, USER + ASSISTANT)
        assert stop is StopReason.CALL
        assert text.endswith(CALL_TEXT.format(code=CODES[0]))
        assert len(recorded.bodies(path)) == 1

        after_first = USER + f"<|start|>assistant<|channel|>analysis<|message|>{REASONING}<|end|>"
        after_first += _ran(CODES[0], OUTPUTS[0])
        stop, text = _generate(backend, after_first + ASSISTANT)
        assert (stop, text) == (StopReason.CALL, CALL_TEXT.format(code=CODES[1]))
        assert len(recorded.bodies(path)) == 1  # the second call came without a request

        stop, text = _generate(backend, after_first + _ran(CODES[1], OUTPUTS[1]) + ASSISTANT)
        assert stop is StopReason.RETURN and BOTH in text
        bodies = recorded.bodies(path)
    assert len(bodies) == 2
    assert _conversation(dialect, bodies[1]) == [
        ("call", first_id, CODES[0]),
        ("result", first_id, OUTPUTS[0]),
        ("call", second_id, CODES[1]),
        ("result", second_id, OUTPUTS[1]),
    ]
    if dialect != "responses":  # each call in an assistant message of its own
        calls = [m for m in bodies[1]["messages"] if m.get("tool_calls")]
        assert [len(m["tool_calls"]) for m in calls] == [1, 1]


@pytest.mark.parametrize("dialect", ["chat", "responses", "ollama"])
def test_waiting_calls_are_dropped_when_the_prompt_does_not_continue_them(dialect: str) -> None:
    routes, path = PARALLEL_SERVERS[dialect]
    with serving(routes) as recorded, open_backend(_config(recorded.root, dialect)) as backend:
        assert _generate(backend, USER + ASSISTANT)[0] is StopReason.CALL
        # Another conversation that ends with the same call's result: not this one's turn.
        other = "<|start|>user<|message|>something else<|end|>" + _ran(CODES[0], OUTPUTS[0])
        stop, text = _generate(backend, other + ASSISTANT)
        assert stop is StopReason.RETURN and BOTH in text
        assert len(recorded.bodies(path)) == 2
        # The person interrupted and wrote again: the second call is not handed out later.
        assert _generate(backend, USER + ASSISTANT)[0] is StopReason.CALL
        interrupted = USER + _ran(CODES[0], OUTPUTS[0])
        interrupted += "<|start|>user<|message|>stop, just say hi<|end|>"
        stop, _ = _generate(backend, interrupted + ASSISTANT)
        assert stop is StopReason.RETURN
        assert len(recorded.bodies(path)) == 4
        assert not backend.waiting  # type: ignore[attr-defined]


@pytest.mark.parametrize("indexed", [True, False])
def test_calls_each_whole_in_a_chunk_of_their_own_are_two_calls(indexed: bool) -> None:
    """Ollama's /v1: with an index each, and as it was before its calls had one (all 0)."""
    routes = {"/v1/chat/completions": ollama_v1_parallel_chat(indexed=indexed)}
    with serving(routes) as recorded, open_backend(_config(recorded.root, "chat")) as backend:
        stop, text = _generate(backend, USER + ASSISTANT)
        assert (stop, text) == (StopReason.CALL, CALL_TEXT.format(code=CODES[0]))
        after_first = USER + _ran(CODES[0], OUTPUTS[0])
        stop, text = _generate(backend, after_first + ASSISTANT)
        assert (stop, text) == (StopReason.CALL, CALL_TEXT.format(code=CODES[1]))
        stop, text = _generate(backend, after_first + _ran(CODES[1], OUTPUTS[1]) + ASSISTANT)
        assert stop is StopReason.RETURN and BOTH in text
        bodies = recorded.bodies("/v1/chat/completions")
    assert len(bodies) == 2
    assert [(kind, call_id) for kind, call_id, _ in _conversation("chat", bodies[1])] == [
        ("call", IDS["ollama"][0]),
        ("result", IDS["ollama"][0]),
        ("call", IDS["ollama"][1]),
        ("result", IDS["ollama"][1]),
    ]


def test_the_same_call_made_twice_goes_back_under_both_ids() -> None:
    twice = (CODES[0], CODES[0])
    routes = {"/v1/chat/completions": lambda body: openai_parallel_chat(body, twice)}
    with serving(routes) as recorded, open_backend(_config(recorded.root, "chat")) as backend:
        assert _generate(backend, USER + ASSISTANT)[0] is StopReason.CALL
        after_first = USER + _ran(CODES[0], OUTPUTS[0])
        stop, text = _generate(backend, after_first + ASSISTANT)
        assert (stop, text) == (StopReason.CALL, CALL_TEXT.format(code=CODES[0]))
        assert _generate(backend, after_first + _ran(CODES[0], "42 again\n") + ASSISTANT)[1]
        body = recorded.bodies("/v1/chat/completions")[-1]
    first_id, second_id = IDS["chat"]
    assert _conversation("chat", body) == [
        ("call", first_id, CODES[0]),
        ("result", first_id, OUTPUTS[0]),
        ("call", second_id, CODES[0]),
        ("result", second_id, "42 again\n"),
    ]
