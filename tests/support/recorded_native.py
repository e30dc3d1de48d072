"""Ollama's native API and OpenAI-compatible /v1, and the Responses API (as vLLM serves
gpt-oss). Each shape says where it comes from: a capture (recorded by someone, quoted) or
assembled from the server's source at a named version (field order as its encoder writes it).
"""

from __future__ import annotations

import json
from typing import Any

from support.recorded_common import (
    AFTER,
    ANSWER,
    CODE,
    REASONING,
    Reply,
    split,
    sse,
    tool_result_seen,
)

# ----------------------------------------------------------------------------------- Ollama
# /api/chat streams one JSON object a line (application/x-ndjson): model, created_at,
# message {role, content, thinking, tool_calls [{id, function {index, name, arguments
# (an object)}}]}, done, then done_reason and the Metrics (total_duration, load_duration,
# prompt_eval_count, prompt_eval_duration, eval_count, eval_duration) on the last line.
# Assembled from ollama/ollama v0.33.0-rc2 (fb30760, 2026-08-21) api/types.go (ChatResponse,
# Message, ToolCall, ToolCallFunction, Metrics: json.Marshal writes fields in struct order)
# and docs/api.md ("Chat request (Streaming with tools)"), whose example gives the counters.
# /api/tags and /api/version: docs/api.md ("List Local Models", "Version").


#: The counters Ollama's last line of a streamed /api/chat carries (its docs' example).
OLLAMA_DONE: dict[str, Any] = {
    "done_reason": "stop",
    "total_duration": 182242375,
    "load_duration": 41295167,
    "prompt_eval_count": 169,
    "prompt_eval_duration": 24573166,
    "eval_count": 15,
    "eval_duration": 115959084,
}


def _ollama_line(
    message: dict[str, Any], done: bool = False, tail: dict[str, Any] | None = None
) -> bytes:
    line: dict[str, Any] = {
        "model": "gpt-oss:20b",
        "created_at": "2025-08-05T20:22:19.184789Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    line.update(tail or {})
    return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def ollama_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    lines = [_ollama_line({"thinking": p}) for p in split(AFTER if seen else REASONING)]
    if seen:
        lines += [_ollama_line({"content": p}) for p in split(ANSWER)]
    else:
        call = {
            "id": "call_ouqxt6uo",
            "function": {"index": 0, "name": "python", "arguments": {"code": CODE}},
        }
        lines.append(_ollama_line({"tool_calls": [call]}))
    lines.append(
        _ollama_line(
            {},
            done=True,
            tail=OLLAMA_DONE,
        )
    )
    return 200, "application/x-ndjson", lines


# Ollama's /v1/completions templates the prompt itself and sends the answer's text only:
# CompletionChunk {id "cmpl-NNN", object "text_completion", created, choices [{text, index,
# finish_reason}], model, system_fingerprint "fp_ollama"}. Assembled from ollama/ollama
# v0.33.0-rc2 openai/openai.go (CompletionChunk) and middleware/openai.go ("cmpl-%d").


def _ollama_text(text: str, finish: str | None = None) -> bytes:
    return (
        '{"id":"cmpl-414","object":"text_completion","created":1754425339,"choices":[{"text":'
        f'{json.dumps(text)},"index":0,"finish_reason":{json.dumps(finish)}}}],'
        '"model":"gpt-oss:20b","system_fingerprint":"fp_ollama"}'
    ).encode()


def ollama_completions(body: dict[str, Any] | None) -> Reply:
    if body and not body.get("stream"):  # a whole Completion (openai/openai.go)
        answer = (
            '{"id":"cmpl-415","object":"text_completion","created":1754425339,'
            '"model":"gpt-oss:20b","system_fingerprint":"fp_ollama","choices":[{"text":"Hello",'
            '"index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":71,'
            '"completion_tokens":1,"total_tokens":72}}'
        )
        return 200, "application/json", [answer.encode()]
    events = [_ollama_text(p) for p in split(ANSWER)]
    events.append(_ollama_text("", "stop"))
    return 200, "text/event-stream", sse(*events)


# Ollama's /v1/chat/completions, assembled from ollama/ollama v0.33.0-rc2 (fb30760)
# middleware/openai.go (ChatWriter.writeResponse) and openai/openai.go (ToStreamChunks,
# toChunk, FinishChunk, ChatCompletionChunk, Delta, ToolCall), fed the /api/chat lines above:
# the role only in the first chunk, reasoning in "reasoning" with "content":"" beside it, a
# tool call whole in one delta (arguments a JSON string), the metrics-only last line turned
# into a finish chunk with an empty delta, then (stream_options.include_usage) the same chunk
# with "choices":[] and the usage, then [DONE]. Ids "chatcmpl-%d"; /v1/models is
# ToListCompletion (owned_by: the model name's namespace).


def _ollama_chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-517",
        "object": "chat.completion.chunk",
        "created": 1754425339,
        "model": "gpt-oss:20b",
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["choices"] = []
        chunk["usage"] = usage
    return json.dumps(chunk, separators=(",", ":")).encode()


def ollama_openai_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    deltas: list[dict[str, Any]] = [
        {"content": "", "reasoning": p} for p in split(AFTER if seen else REASONING)
    ]
    if seen:
        deltas += [{"content": p} for p in split(ANSWER)]
    else:
        arguments = json.dumps({"code": CODE}, separators=(",", ":"))
        call = {
            "id": "call_ouqxt6uo",
            "index": 0,
            "type": "function",
            "function": {"name": "python", "arguments": arguments},
        }
        deltas.append({"content": "", "tool_calls": [call]})
    deltas[0] = {"role": "assistant", **deltas[0]}
    events = [_ollama_chunk(d) for d in deltas]
    finish = "stop" if seen else "tool_calls"
    events.append(_ollama_chunk({}, finish))
    if body and (body.get("stream_options") or {}).get("include_usage"):
        count = OLLAMA_DONE["prompt_eval_count"], OLLAMA_DONE["eval_count"]
        usage = {"prompt_tokens": count[0], "completion_tokens": count[1],
                 "total_tokens": sum(count)}  # fmt: skip
        events.append(_ollama_chunk({}, finish, usage))
    return 200, "text/event-stream", sse(*events)


OLLAMA_V1_MODELS = {
    "object": "list",
    "data": [
        {"id": "gpt-oss:20b", "object": "model", "created": 1754406408, "owned_by": "library"}
    ],
}


OLLAMA_TAGS = {
    "models": [
        {
            "name": "gpt-oss:20b",
            "model": "gpt-oss:20b",
            "modified_at": "2025-08-05T08:06:48.639712648-07:00",
            "size": 13780173839,
            "digest": "aa4295ac10c3afb60e6d711289fc6896f5aef82258997b9efdaed6d0cc4cd8b8",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "gptoss",
                "families": ["gptoss"],
                "parameter_size": "20.9B",
                "quantization_level": "MXFP4",
            },
        }
    ]
}


# ------------------------------------------------------------------------- Responses API
# vLLM serving openai/gpt-oss-20b, recorded in vllm-project/agentic-api
# crates/agentic-core/tests/cassettes/reasoning/responses/reasoning-single-openai-gpt-oss-
# 20b-streaming.yaml and crates/agentic-server-core/tests/cassettes/codex/codex-vllm-web-
# search-then-namespace-gpt-oss-20b-streaming.yaml: "event: TYPE" then "data: {…}" (keys
# sorted) per event, reasoning_text deltas, a function_call item with its call_id and
# arguments deltas, response.completed with the usage.


def _event(kind: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps({**data, "type": kind}, sort_keys=True, separators=(",", ":"))
    return f"event: {kind}\ndata: {payload}\n\n".encode()


def vllm_responses(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    seq = iter(range(10_000))
    out = [
        _event(
            "response.created",
            {
                "response": {
                    "id": "resp_9fdfaf29a1596f70",
                    "object": "response",
                    "output": [],
                    "status": "in_progress",
                },
                "sequence_number": next(seq),
            },
        )
    ]
    out.append(
        _event(
            "response.output_item.added",
            {
                "item": {
                    "id": "msg_bdff6c694d0c26b6",
                    "summary": [],
                    "type": "reasoning",
                    "content": None,
                    "encrypted_content": None,
                    "status": "in_progress",
                },
                "output_index": 0,
                "sequence_number": next(seq),
            },
        )
    )
    for piece in split(AFTER if seen else REASONING):
        out.append(
            _event(
                "response.reasoning_text.delta",
                {
                    "content_index": 0,
                    "delta": piece,
                    "item_id": "msg_bdff6c694d0c26b6",
                    "output_index": 0,
                    "sequence_number": next(seq),
                },
            )
        )
    if seen:
        out.append(
            _event(
                "response.output_item.added",
                {
                    "item": {
                        "id": "msg_b35c15db1b8efefc",
                        "content": [],
                        "role": "assistant",
                        "status": "in_progress",
                        "type": "message",
                        "phase": None,
                    },
                    "output_index": 1,
                    "sequence_number": next(seq),
                },
            )
        )
        for piece in split(ANSWER):
            out.append(
                _event(
                    "response.output_text.delta",
                    {
                        "content_index": 1,
                        "delta": piece,
                        "item_id": "msg_b35c15db1b8efefc",
                        "logprobs": [],
                        "output_index": 1,
                        "sequence_number": next(seq),
                    },
                )
            )
    else:
        out.append(
            _event(
                "response.output_item.added",
                {
                    "item": {
                        "arguments": "",
                        "call_id": "call_966ac832ff2c814e",
                        "name": "python",
                        "type": "function_call",
                        "id": "fc_9105bc40ba2a4559",
                        "namespace": None,
                        "status": "in_progress",
                    },
                    "output_index": 1,
                    "sequence_number": next(seq),
                },
            )
        )
        for piece in ['{"', "code", '":"', "print(6*7)", '"}']:
            out.append(
                _event(
                    "response.function_call_arguments.delta",
                    {
                        "delta": piece,
                        "item_id": "fc_9105bc40ba2a4559",
                        "output_index": 1,
                        "sequence_number": next(seq),
                    },
                )
            )
        args = json.dumps({"code": CODE}, separators=(",", ":"))
        out.append(
            _event(
                "response.function_call_arguments.done",
                {
                    "arguments": args,
                    "item_id": "fc_9105bc40ba2a4559",
                    "name": "python",
                    "output_index": 1,
                    "sequence_number": next(seq),
                },
            )
        )
    usage = {
        "input_tokens": 176,
        "input_tokens_details": {"cached_tokens": 80},
        "output_tokens": 36,
        "output_tokens_details": {"reasoning_tokens": 16, "tool_output_tokens": 0},
        "total_tokens": 212,
    }
    out.append(
        _event(
            "response.completed",
            {
                "response": {
                    "id": "resp_9fdfaf29a1596f70",
                    "object": "response",
                    "status": "completed",
                    "incomplete_details": None,
                    "usage": usage,
                },
                "sequence_number": next(seq),
            },
        )
    )
    return 200, "text/event-stream; charset=utf-8", out
