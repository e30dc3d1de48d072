"""Servers that answer with one ``apply_patch`` call, in each chat dialect's real shape.

Assembled from the recorded envelopes (recorded_openai.py, recorded_native.py, and how a
call streams in each API: recorded_parallel.py cites the sources): the person asks for an
edit, the server calls the function ``apply_patch`` with Codex's arguments ``{"input": PATCH}``
(lmc offers it so, as Codex declares the tool), and once the request carries the tool's
result, it answers.
"""

from __future__ import annotations

import json
from typing import Any

from support.recorded_common import REASONING, Reply, Route, split, sse, tool_result_seen
from support.recorded_native import OLLAMA_DONE, _event, _ollama_line
from support.recorded_openai import HOSTED_MODELS, VLLM_MODELS, _hosted_chunk, _vllm_text, vllm_raw

__all__ = ["EDITED", "PATCH", "PATCH_SERVERS"]

PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+BETA\n*** End Patch\n"
EDITED = "The notes are edited."
_ARGUMENTS = json.dumps({"input": PATCH}, separators=(",", ":"))
_CALL_IDS = {"chat": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "responses": "call_966ac832ff2c814e"}


def openai_patch_chat(body: dict[str, Any] | None) -> Reply:
    events = [_hosted_chunk({"role": "assistant", "content": "", "refusal": None})]
    if tool_result_seen(body):
        events += [_hosted_chunk({"content": p}) for p in split(EDITED)]
        events.append(_hosted_chunk({}, "stop"))
        return 200, "text/event-stream", sse(*events)
    events += [_hosted_chunk({"reasoning": p}) for p in split(REASONING)]
    first = {
        "index": 0,
        "id": _CALL_IDS["chat"],
        "type": "function",
        "function": {"name": "apply_patch", "arguments": ""},
    }
    events.append(_hosted_chunk({"tool_calls": [first]}))
    for piece in split(_ARGUMENTS, 7):
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        events.append(_hosted_chunk(delta))
    events.append(_hosted_chunk({}, "tool_calls"))
    return 200, "text/event-stream", sse(*events)


def _responses_call(seq: list[int]) -> list[bytes]:
    call_id = _CALL_IDS["responses"]
    item_id = f"fc_{call_id.removeprefix('call_')}"

    def event(kind: str, data: dict[str, Any]) -> bytes:
        seq[0] += 1
        return _event(kind, {**data, "output_index": 0, "sequence_number": seq[0]})

    item = {"call_id": call_id, "name": "apply_patch", "type": "function_call", "id": item_id}
    out = [
        event(
            "response.output_item.added",
            {"item": {"arguments": "", **item, "namespace": None, "status": "in_progress"}},
        )
    ]
    for piece in split(_ARGUMENTS, 7):
        out.append(
            event("response.function_call_arguments.delta", {"delta": piece, "item_id": item_id})
        )
    done = {"arguments": _ARGUMENTS, "item_id": item_id, "name": "apply_patch"}
    out.append(event("response.function_call_arguments.done", done))
    whole = {"arguments": _ARGUMENTS, **item, "namespace": None, "status": "completed"}
    out.append(event("response.output_item.done", {"item": whole}))
    return out


def vllm_patch_responses(body: dict[str, Any] | None) -> Reply:
    seq = [0]
    response = {"id": "resp_9fdfaf29a1596f70", "object": "response", "output": []}
    created = {"response": {**response, "status": "in_progress"}, "sequence_number": 0}
    out = [_event("response.created", created)]
    if tool_result_seen(body):
        for piece in split(EDITED):
            seq[0] += 1
            delta = {"content_index": 0, "delta": piece, "item_id": "msg_b35c15db1b8efefc"}
            out.append(
                _event(
                    "response.output_text.delta",
                    {**delta, "logprobs": [], "output_index": 0, "sequence_number": seq[0]},
                )
            )
    else:
        out += _responses_call(seq)
    usage = {
        "input_tokens": 176,
        "input_tokens_details": {"cached_tokens": 80},
        "output_tokens": 52,
        "output_tokens_details": {"reasoning_tokens": 0, "tool_output_tokens": 0},
        "total_tokens": 228,
    }
    completed = {**response, "status": "completed", "incomplete_details": None, "usage": usage}
    out.append(_event("response.completed", {"response": completed, "sequence_number": seq[0] + 1}))
    return 200, "text/event-stream; charset=utf-8", out


def ollama_patch_chat(body: dict[str, Any] | None) -> Reply:
    if tool_result_seen(body):
        lines = [_ollama_line({"content": p}) for p in split(EDITED)]
    else:
        lines = [_ollama_line({"thinking": p}) for p in split(REASONING)]
        function = {"index": 0, "name": "apply_patch", "arguments": {"input": PATCH}}
        lines.append(_ollama_line({"tool_calls": [{"id": "call_ouqxt6uo", "function": function}]}))
    lines.append(_ollama_line({}, done=True, tail=OLLAMA_DONE))
    return 200, "application/x-ndjson", lines


def vllm_patch_raw(body: dict[str, Any] | None) -> Reply:
    """vLLM's /v1/completions (raw Harmony, recorded_openai.vllm_raw's envelope): the model's
    own text, the call to ``functions.apply_patch`` with the raw patch, as gpt-oss writes it."""
    if not body or not body.get("stream"):
        return vllm_raw(body)  # lmc's probe
    if "<|start|>functions.apply_patch to=assistant" in str(body.get("prompt")):
        pieces = ["<|channel|>", "final", "<|message|>", EDITED]
    else:
        pieces = ["<|channel|>", "commentary", " to=functions.apply_patch", "<|message|>"]
        pieces += split(PATCH, 16)
    events = [_vllm_text(piece) for piece in pieces]
    events.append(_vllm_text("", "stop"))  # vLLM leaves out the stop token (<|call|>)
    return 200, "text/event-stream", sse(*events)


def _static(body: Any) -> Route:
    return lambda _request: (200, "application/json", [json.dumps(body).encode()])


#: Each dialect's server, the path its answers come from, and the model to ask for.
PATCH_SERVERS: dict[str, tuple[dict[str, Route], str, str | None]] = {
    "chat": (
        {"/v1/models": _static(HOSTED_MODELS), "/v1/chat/completions": openai_patch_chat},
        "/v1/chat/completions",
        "gpt-oss-120b",
    ),
    "completions": (
        {"/v1/models": _static(VLLM_MODELS), "/v1/completions": vllm_patch_raw},
        "/v1/completions",
        None,
    ),
    "responses": ({"/v1/responses": vllm_patch_responses}, "/v1/responses", None),
    "ollama": (
        {"/api/version": _static({"version": "0.11.4"}), "/api/chat": ollama_patch_chat},
        "/api/chat",
        None,
    ),
}
