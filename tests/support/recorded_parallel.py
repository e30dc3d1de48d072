"""Servers that answer with two tool calls in one message, in each dialect's real shape.

The turn: the person asks for 6*7 and 6*8, the server answers with two python calls at
once, and once the request carries a tool result, with the final answer. Assembled: the
envelopes are those of recorded_openai.py and recorded_native.py (each says its source and
version); how several calls travel in one answer is each API's own:

- Chat Completions: every call has its own ``index`` in ``delta.tool_calls``; the first delta
  of a call carries its id, type and name with empty arguments, the later ones only the index
  and a piece of the arguments, and one ``finish_reason: "tool_calls"`` ends them all
  (platform.openai.com/docs/guides/function-calling, "Streaming", which accumulates
  ``final_tool_calls[index]``; openai-python ``ChoiceDeltaToolCall``: index, id, function,
  type).
- Responses API: each call is its own ``function_call`` output item under the next
  ``output_index``: ``response.output_item.added`` (id, call_id, name, empty arguments),
  ``response.function_call_arguments.delta`` / ``.done`` under that item_id and
  output_index, then ``response.output_item.done`` (platform.openai.com/docs/guides/
  function-calling, "Streaming", which keys calls by ``output_index``), in vLLM's envelope.
- Ollama's ``/v1/chat/completions``: each call whole (id, index, type, name, all its
  arguments) in a chunk of its own, ``system_fingerprint`` "fp_ollama" (a recorded parallel
  stream: g0t4/ask-openai.nvim lua/ask-openai/backends/ollama/notes/sses.md), and before
  Ollama gave its calls an index, the same without ``index`` (ollama/ollama issue #7881).
- Ollama ``/api/chat``: ``message.tool_calls`` entries ``{id, function {index, name,
  arguments (an object)}}`` with index 0, 1, ... (ollama/ollama docs/capabilities/
  tool-calling.mdx, "Parallel tool calling"; api/types.go ``ToolCall``), and streamed, the
  calls of one answer may come in separate lines ("Tool calling with streaming":
  ``tool_calls.extend(chunk.message.tool_calls)``).
"""

from __future__ import annotations

import json
from typing import Any

from support.recorded_common import REASONING, Reply, Route, split, sse, tool_result_seen
from support.recorded_native import OLLAMA_DONE, _event, _ollama_line
from support.recorded_openai import HOSTED_MODELS, _hosted_chunk

__all__ = [
    "BOTH",
    "CODES",
    "IDS",
    "OUTPUTS",
    "PARALLEL",
    "PARALLEL_SERVERS",
    "ollama_v1_parallel_chat",
    "openai_parallel_chat",
]

#: The two calls' code, their outputs, and the answer once both ran.
CODES = ("print(6*7)", "print(6*8)")
OUTPUTS = ("42\n", "48\n")
BOTH = "6*7 = 42 and 6*8 = 48."
PARALLEL = "compute 6*7 and 6*8 with python"
AFTER_BOTH = "Both outputs are in."

#: The ids each server gave the two calls.
IDS: dict[str, tuple[str, str]] = {
    "chat": ("call_DdmO9pD3xa9XTPNJ32zg2hcA", "call_ABTOnM7YhBW0OCWqmjPgxdvE"),
    "responses": ("call_966ac832ff2c814e", "call_b1d05a7e3c9f4a21"),
    "ollama": ("call_ouqxt6uo", "call_k2r8vq1d"),
}


def _arguments(code: str) -> str:
    return json.dumps({"code": code}, separators=(",", ":"))


# -------------------------------------------------------------------------- Chat Completions


def openai_parallel_chat(body: dict[str, Any] | None, codes: tuple[str, str] = CODES) -> Reply:
    """Two calls with ``codes`` (the same twice, for a server that made one call twice)."""
    seen = tool_result_seen(body)
    events = [_hosted_chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [_hosted_chunk({"reasoning": p}) for p in split(AFTER_BOTH if seen else REASONING)]
    if seen:
        events += [_hosted_chunk({"content": p}) for p in split(BOTH)]
        events.append(_hosted_chunk({}, "stop"))
        return 200, "text/event-stream", sse(*events)
    for index, (call_id, code) in enumerate(zip(IDS["chat"], codes, strict=True)):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": "python", "arguments": ""},
        }
        events.append(_hosted_chunk({"tool_calls": [first]}))
        for piece in split(_arguments(code), 7):
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            events.append(_hosted_chunk(delta))
    events.append(_hosted_chunk({}, "tool_calls"))
    return 200, "text/event-stream", sse(*events)


def _ollama_v1_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return (
        '{"id":"chatcmpl-18","object":"chat.completion.chunk","created":1744446075,'
        '"model":"gpt-oss:20b","system_fingerprint":"fp_ollama","choices":[{"index":0,'
        f'"delta":{json.dumps({"role": "assistant", "content": "", **delta})},'
        f'"finish_reason":{json.dumps(finish)}}}]}}'
    ).encode()


def ollama_v1_parallel_chat(*, indexed: bool) -> Route:
    """Ollama's /v1 answering with two calls; ``indexed`` False: as before calls had an index."""

    def answer(body: dict[str, Any] | None) -> Reply:
        if tool_result_seen(body):
            events = [_ollama_v1_chunk({"content": p}) for p in split(BOTH)]
            events.append(_ollama_v1_chunk({}, "stop"))
            return 200, "text/event-stream", sse(*events)
        events = []
        for index, (call_id, code) in enumerate(zip(IDS["ollama"], CODES, strict=True)):
            call: dict[str, Any] = {"id": call_id, "index": index, "type": "function"}
            if not indexed:
                del call["index"]
            call["function"] = {"name": "python", "arguments": _arguments(code)}
            events.append(_ollama_v1_chunk({"tool_calls": [call]}))
        events.append(_ollama_v1_chunk({}, "tool_calls"))
        return 200, "text/event-stream", sse(*events)

    return answer


# ----------------------------------------------------------------------------- Responses API


def _function_call(index: int, call_id: str, code: str, seq: list[int]) -> list[bytes]:
    """One function_call output item, added, its arguments streamed, then done."""
    item_id = f"fc_{call_id.removeprefix('call_')}"
    output_index = index + 1  # after the reasoning item

    def event(kind: str, data: dict[str, Any]) -> bytes:
        seq[0] += 1
        return _event(kind, {**data, "output_index": output_index, "sequence_number": seq[0]})

    item = {"call_id": call_id, "name": "python", "type": "function_call", "id": item_id}
    out = [
        event(
            "response.output_item.added",
            {"item": {"arguments": "", **item, "namespace": None, "status": "in_progress"}},
        )
    ]
    for piece in split(_arguments(code), 7):
        out.append(
            event("response.function_call_arguments.delta", {"delta": piece, "item_id": item_id})
        )
    done = {"arguments": _arguments(code), "item_id": item_id, "name": "python"}
    out.append(event("response.function_call_arguments.done", done))
    whole = {"arguments": _arguments(code), **item, "namespace": None, "status": "completed"}
    out.append(event("response.output_item.done", {"item": whole}))
    return out


def vllm_parallel_responses(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    seq = [0]
    response = {"id": "resp_9fdfaf29a1596f70", "object": "response", "output": []}
    out = [
        _event(
            "response.created",
            {"response": {**response, "status": "in_progress"}, "sequence_number": 0},
        )
    ]
    for piece in split(AFTER_BOTH if seen else REASONING):
        seq[0] += 1
        delta = {"content_index": 0, "delta": piece, "item_id": "msg_bdff6c694d0c26b6"}
        out.append(
            _event(
                "response.reasoning_text.delta",
                {**delta, "output_index": 0, "sequence_number": seq[0]},
            )
        )
    if seen:
        for piece in split(BOTH):
            seq[0] += 1
            delta = {"content_index": 1, "delta": piece, "item_id": "msg_b35c15db1b8efefc"}
            out.append(
                _event(
                    "response.output_text.delta",
                    {**delta, "logprobs": [], "output_index": 1, "sequence_number": seq[0]},
                )
            )
    else:
        for index, (call_id, code) in enumerate(zip(IDS["responses"], CODES, strict=True)):
            out += _function_call(index, call_id, code, seq)
    usage = {
        "input_tokens": 176,
        "input_tokens_details": {"cached_tokens": 80},
        "output_tokens": 52,
        "output_tokens_details": {"reasoning_tokens": 16, "tool_output_tokens": 0},
        "total_tokens": 228,
    }
    completed = {**response, "status": "completed", "incomplete_details": None, "usage": usage}
    out.append(_event("response.completed", {"response": completed, "sequence_number": seq[0] + 1}))
    return 200, "text/event-stream; charset=utf-8", out


# ------------------------------------------------------------------------------------ Ollama


def ollama_parallel_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    lines = [_ollama_line({"thinking": p}) for p in split(AFTER_BOTH if seen else REASONING)]
    if seen:
        lines += [_ollama_line({"content": p}) for p in split(BOTH)]
    else:
        for index, (call_id, code) in enumerate(zip(IDS["ollama"], CODES, strict=True)):
            function = {"index": index, "name": "python", "arguments": {"code": code}}
            lines.append(_ollama_line({"tool_calls": [{"id": call_id, "function": function}]}))
    lines.append(_ollama_line({}, done=True, tail=OLLAMA_DONE))
    return 200, "application/x-ndjson", lines


def _static(body: Any) -> Route:
    return lambda _request: (200, "application/json", [json.dumps(body).encode()])


#: Each dialect's server, and the path its answers come from.
PARALLEL_SERVERS: dict[str, tuple[dict[str, Route], str]] = {
    "chat": (
        {"/v1/models": _static(HOSTED_MODELS), "/v1/chat/completions": openai_parallel_chat},
        "/v1/chat/completions",
    ),
    "responses": ({"/v1/responses": vllm_parallel_responses}, "/v1/responses"),
    "ollama": (
        {"/api/version": _static({"version": "0.11.4"}), "/api/chat": ollama_parallel_chat},
        "/api/chat",
    ),
}
