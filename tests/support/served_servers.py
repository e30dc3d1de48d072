"""Loopback servers with a small context, answering as Ollama, LM Studio, llama.cpp's server
and vLLM really do when a prompt is longer than it (the model behind them: served_model.py).

Each states its context where the real one does, and treats an over-long prompt the real
one's way:

- Ollama cuts it in silence. ``server/prompt.go`` (``chatPrompt``, ollama/ollama v0.12):
  whole messages are dropped from the front until the rest fits ``num_ctx``; system messages
  and the last message are always kept; ``prompt_eval_count`` (api/types.go ``Metrics``)
  reports the tokens kept. ``/api/chat`` runs at ``options.num_ctx`` (capped by the trained
  context), ``/v1`` (openai/openai.go, which has no num_ctx) at the loaded size. The model
  lists: ``/api/ps`` (api/types.go ``ProcessModelResponse``, with ``context_length``),
  ``/api/show`` (``ShowResponse.model_info``, ``gptoss.context_length``), ``/api/generate``
  with no prompt loads the model (docs/api.md "Load a model", ``done_reason`` "load").
- LM Studio answers HTTP 400 ``{"error": "The number of tokens to keep from the initial
  prompt is greater than the context length (n_keep: N>= n_ctx: M). Try to load the model with
  a larger context length, or provide a shorter input."}`` (LM Studio 0.3/0.4, as reported in
  Gitlawb/openclaude#353); ``/api/v0/models`` (its REST API docs) has ``state``,
  ``max_context_length`` and, once loaded, ``loaded_context_length``.
- llama.cpp's server answers HTTP 400 ``{"error": {"code": 400, "message": "request (N tokens)
  exceeds the available context size (M tokens), try increasing it", "type":
  "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M}}`` (ggml-org/llama.cpp
  tools/server/server-context.cpp ``send_error(... ERROR_TYPE_EXCEED_CONTEXT_SIZE)``,
  server-common.cpp ``format_error_response``, server-task.cpp
  ``server_task_result_error::to_json`` adding the counts); ``/props`` has
  ``default_generation_settings.n_ctx`` (tools/server/README.md "GET /props").
- vLLM answers HTTP 400 ``{"error": {"message": "This model's maximum context length is M
  tokens. However, your request has N input tokens. Please reduce the length of the input
  messages. None", "type": "BadRequestError", "param": null, "code": 400}}``
  (vllm/entrypoints/openai/serving_engine.py ``_validate_input``, ``ErrorResponse`` in
  protocol.py, v0.10/0.11); ``/v1/models`` has ``max_model_len``.

The streamed answers reuse the recorded chunk shapes (recorded_native.py, recorded_openai.py);
the Ollama ``/v1`` chat chunk is ``ChatCompletionChunk`` of openai/openai.go (assembled from
its fields: id "chatcmpl-N", object, created, model, system_fingerprint "fp_ollama", choices
with ``delta.reasoning``, a whole tool call in one delta, then the usage chunk).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from support.recorded_common import Reply, Route, json_reply, split, sse
from support.recorded_native import OLLAMA_DONE, OLLAMA_TAGS, _ollama_line
from support.recorded_openai import (
    LLAMA_MODELS,
    LMS_MODELS,
    LMS_V0_MODELS,
    VLLM_MODELS,
    _llama_chunk,
    _lms_chunk,
    _vllm_text,
    vllm_raw,
)
from support.recorded_servers import Recorded, serving
from support.served_model import REQUEST, TASK, Answer, answer_for, server_tokens

__all__ = ["CONTEXT", "OLLAMA_MODEL_INFO", "Stand", "stand_in"]

#: The context every stand-in serves (Ollama's default on most machines).
CONTEXT: Final = 4096
TRAINED: Final = 131072


@dataclass
class Stand:
    """What a stand-in saw: the requests it cut, refused and answered."""

    context: int = CONTEXT
    #: Requests whose visible text no longer held the person's request (Ollama's cut).
    lost: int = 0
    #: Requests answered with a context-overflow error.
    refused: int = 0
    #: Ollama: requests cut in silence; their (kept, asked) tokens.
    cuts: list[tuple[int, int]] = field(default_factory=list)
    #: Ollama /api/chat: num_ctx of each request (None: none sent).
    num_ctx: list[int | None] = field(default_factory=list)
    #: Ollama: the context the model is loaded at (None: not loaded).
    loaded: int | None = None
    #: The Nth streamed answer (1-based) is cut off mid-stream, once.
    drop_at: int | None = None
    #: The server's tokens per stand-in token (a tokenizer far from lmc's estimate).
    scale: float = 1.0
    answers: int = 0
    record: Recorded | None = None

    def dropping(self, body: dict[str, Any]) -> bool:
        """Whether to cut this answer off (streamed answers counted, not lmc's probes)."""
        if not body.get("stream"):
            return False
        self.answers += 1
        return self.answers == self.drop_at


# --------------------------------------------------------------------------------- Ollama


def _message_text(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


#: Tokens the server's own template adds around the messages (gpt-oss's system message).
TEMPLATE: Final = 60


def request_tokens(messages: list[dict[str, Any]], tools: Any) -> int:
    """The templated prompt's tokens: the template, the tools, the messages."""
    fixed = TEMPLATE + (server_tokens(json.dumps(tools)) if tools else 0)
    return fixed + sum(server_tokens(_message_text(m)) for m in messages)


def ollama_cut(
    messages: list[dict[str, Any]], tools: Any, ctx: int
) -> tuple[list[dict[str, Any]], int]:
    """server/prompt.go's truncation: (the messages kept, the tokens of the prompt kept)."""
    first = len(messages) - 1
    for index in range(len(messages) - 1, -1, -1):
        system = [m for m in messages[:index] if m["role"] == "system"]
        if request_tokens(system + messages[index:], tools) > ctx:
            break
        first = index
    kept = [m for m in messages[:first] if m["role"] == "system"] + messages[first:]
    return kept, request_tokens(kept, tools)


def _seen(messages: list[dict[str, Any]]) -> str:
    return "\n".join(_message_text(m) for m in messages)


def _ollama_chat(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        assert body is not None
        options = body.get("options") or {}
        num_ctx = options.get("num_ctx")
        stand.num_ctx.append(num_ctx)
        ctx = min(num_ctx, TRAINED) if num_ctx else (stand.loaded or stand.context)
        stand.loaded = ctx
        messages, used = _ollama_prompt(stand, body, ctx)
        answer = answer_for(_seen(messages))
        lines = [_ollama_line({"thinking": p}) for p in split(answer.reasoning, 24)]
        if answer.code:
            call = {
                "id": f"call_{stand.answers:04d}",
                "function": {"index": 0, "name": "python", "arguments": {"code": answer.code}},
            }
            lines.append(_ollama_line({"tool_calls": [call]}))
        else:
            lines += [_ollama_line({"content": p}) for p in split(answer.text, 24)]
        if stand.dropping(body):
            return 200, "application/x-ndjson", lines[:1]
        tail = {**OLLAMA_DONE, "prompt_eval_count": used, "eval_count": 40}
        lines.append(_ollama_line({}, done=True, tail=tail))
        return 200, "application/x-ndjson", lines

    return route


def _ollama_prompt(
    stand: Stand, body: dict[str, Any], ctx: int
) -> tuple[list[dict[str, Any]], int]:
    messages, tools = body["messages"], body.get("tools")
    asked = request_tokens(messages, tools)
    kept, used = ollama_cut(messages, tools, ctx)
    if len(kept) < len(messages):
        stand.cuts.append((used, asked))
    if TASK in _seen(messages) and TASK not in _seen(kept):
        stand.lost += 1
    return kept, used


def _ollama_v1_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-414",
        "object": "chat.completion.chunk",
        "created": 1754425339,
        "model": "gpt-oss:20b",
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": finish}],
    }
    return json.dumps(chunk, separators=(",", ":")).encode()


def _ollama_v1_chat(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        assert body is not None
        if stand.loaded is None:
            stand.loaded = stand.context
        messages, used = _ollama_prompt(stand, body, stand.loaded)
        answer = answer_for(_seen(messages))
        events = [
            _ollama_v1_chunk({"content": "", "reasoning": p}) for p in split(answer.reasoning, 24)
        ]
        if answer.code:
            call = {
                "id": f"call_{stand.answers:04d}",
                "index": 0,
                "type": "function",
                "function": {"name": "python", "arguments": json.dumps({"code": answer.code})},
            }
            events.append(_ollama_v1_chunk({"content": "", "tool_calls": [call]}))
            events.append(_ollama_v1_chunk({"content": ""}, "tool_calls"))
        else:
            events += [_ollama_v1_chunk({"content": p}) for p in split(answer.text, 24)]
            events.append(_ollama_v1_chunk({"content": ""}, "stop"))
        if stand.dropping(body):
            return 200, "text/event-stream", sse(*events[:1], done=False)
        usage = {"prompt_tokens": used, "completion_tokens": 40, "total_tokens": used + 40}
        events.append(
            json.dumps(
                {"id": "chatcmpl-414", "object": "chat.completion.chunk", "created": 1754425339,
                 "model": "gpt-oss:20b", "system_fingerprint": "fp_ollama", "choices": [],
                 "usage": usage},
                separators=(",", ":"),
            ).encode()
        )  # fmt: skip
        return 200, "text/event-stream", sse(*events)

    return route


def _ollama_ps(stand: Stand) -> Route:
    def route(_body: dict[str, Any] | None) -> Reply:
        if stand.loaded is None:
            return json_reply(200, {"models": []})
        tag = OLLAMA_TAGS["models"][0]
        entry = {
            "name": tag["name"],
            "model": tag["model"],
            "size": 14650000000,
            "digest": tag["digest"],
            "details": tag["details"],
            "expires_at": "2025-08-05T20:30:19.184789Z",
            "size_vram": 14650000000,
            "context_length": stand.loaded,
        }
        return json_reply(200, {"models": [entry]})

    return route


#: gpt-oss:20b's ``model_info`` in /api/show: the keys ollama/ollama v0.12.6
#: convert/convert_gptoss.go writes (``gptoss.attention.head_count_kv`` = KeyValueHeads,
#: ``key_length``/``value_length`` = HeadDim, ``sliding_window``), with the values of
#: openai/gpt-oss-20b's config.json (24 layers, 64 heads, 8 KV heads of 64, window 128).
OLLAMA_MODEL_INFO: Final[dict[str, Any]] = {
    "general.architecture": "gptoss",
    "general.parameter_count": 20914757184,
    "gptoss.attention.head_count": 64,
    "gptoss.attention.head_count_kv": 8,
    "gptoss.attention.key_length": 64,
    "gptoss.attention.sliding_window": 128,
    "gptoss.attention.value_length": 64,
    "gptoss.block_count": 24,
    "gptoss.context_length": TRAINED,
    "gptoss.embedding_length": 2880,
}


def _ollama_show(_body: dict[str, Any] | None) -> Reply:
    return json_reply(
        200,
        {
            "license": "Apache License 2.0",
            "modelfile": "FROM gpt-oss:20b",
            "parameters": "temperature 1",
            "template": "{{ .Prompt }}",
            "details": OLLAMA_TAGS["models"][0]["details"],
            "model_info": OLLAMA_MODEL_INFO,
            "capabilities": ["completion", "tools", "thinking"],
            "modified_at": "2025-08-05T08:06:48.639712648-07:00",
        },
    )


def _ollama_load(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        if stand.loaded is None:
            stand.loaded = stand.context
        model = (body or {}).get("model", "")
        return json_reply(
            200,
            {"model": model, "created_at": "2025-08-05T20:22:19.184789Z", "response": "",
             "done": True, "done_reason": "load"},
        )  # fmt: skip

    return route


def _ollama_routes(stand: Stand) -> dict[str, Route]:
    return {
        "/api/version": lambda _b: json_reply(200, {"version": "0.12.6"}),
        "/api/tags": lambda _b: json_reply(200, OLLAMA_TAGS),
        "/api/ps": _ollama_ps(stand),
        "/api/show": _ollama_show,
        "/api/generate": _ollama_load(stand),
        "/api/chat": _ollama_chat(stand),
        "/v1/chat/completions": _ollama_v1_chat(stand),
    }


# ------------------------------------------------------------------ LM Studio and llama.cpp


def _chat_tokens(body: dict[str, Any]) -> tuple[int, str]:
    """(tokens, visible text) of a Chat Completions request, counted as the stand-ins do."""
    messages = body.get("messages") or []
    return request_tokens(messages, body.get("tools")), _seen(messages)


def _chat_events(
    answer: Answer, chunk: Callable[[dict[str, Any], str | None], bytes], reasoning: str, n: int
) -> list[bytes]:
    """An answer as Chat Completions deltas: reasoning, then the call (id and name, then the
    arguments) or the text, then the finish."""
    events = [chunk({reasoning: p}, None) for p in split(answer.reasoning, 24)]
    if answer.code:
        head = {"index": 0, "id": f"{n:09d}", "type": "function",
                "function": {"name": "python", "arguments": ""}}  # fmt: skip
        events.append(chunk({"tool_calls": [head]}, None))
        arguments = json.dumps({"code": answer.code})
        for piece in split(arguments, 40):
            events.append(
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None)
            )
        events.append(chunk({}, "tool_calls"))
    else:
        events += [chunk({"content": p}, None) for p in split(answer.text, 24)]
        events.append(chunk({}, "stop"))
    return events


def _lms_delta(delta: dict[str, Any], finish: str | None) -> bytes:
    return _lms_chunk({"role": "assistant", **delta}, finish)


def _lmstudio_chat(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        assert body is not None
        stand.loaded = stand.context  # JIT loading: at its default context
        tokens, seen = _chat_tokens(body)
        tokens = int(tokens * stand.scale)
        if tokens >= stand.context:
            stand.refused += 1
            message = (
                "The number of tokens to keep from the initial prompt is greater than the "
                f"context length (n_keep: {tokens}>= n_ctx: {stand.context}). Try to load the "
                "model with a larger context length, or provide a shorter input."
            )
            return json_reply(400, {"error": message})
        events = _chat_events(answer_for(seen), _lms_delta, "reasoning", stand.answers)
        if stand.dropping(body):
            return 200, "text/event-stream", sse(*events[:2], done=False)
        return 200, "text/event-stream", sse(*events)

    return route


def _lmstudio_models(stand: Stand) -> Route:
    def route(_body: dict[str, Any] | None) -> Reply:
        listing: dict[str, Any] = copy.deepcopy(LMS_V0_MODELS)
        entry = listing["data"][0]
        if stand.loaded is None:
            entry["state"] = "not-loaded"
        else:
            entry["state"] = "loaded"
            entry["loaded_context_length"] = stand.loaded
        return json_reply(200, listing)

    return route


def _llama_delta(delta: dict[str, Any], finish: str | None) -> bytes:
    choice = json.dumps(
        {"finish_reason": finish, "index": 0, "delta": delta}, separators=(",", ":")
    )
    return _llama_chunk(choice)


def _llama_chat(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        assert body is not None
        tokens, seen = _chat_tokens(body)
        tokens = int(tokens * stand.scale)
        if tokens >= stand.context:
            stand.refused += 1
            error = {
                "code": 400,
                "message": f"request ({tokens} tokens) exceeds the available context size "
                f"({stand.context} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": stand.context,
            }
            return json_reply(400, {"error": error})
        events = _chat_events(answer_for(seen), _llama_delta, "reasoning_content", stand.answers)
        counts = {"completion_tokens": 40, "prompt_tokens": tokens, "total_tokens": tokens + 40}
        usage = ',"usage":' + json.dumps(counts, separators=(",", ":"))
        events[-1] = _llama_chunk(_last_choice(events[-1]), usage)
        if stand.dropping(body):
            return 200, "text/event-stream", sse(*events[:2], done=False)
        return 200, "text/event-stream", sse(*events)

    return route


def _last_choice(event: bytes) -> str:
    return json.dumps(json.loads(event)["choices"][0], separators=(",", ":"))


def _llama_props(stand: Stand) -> Route:
    def route(_body: dict[str, Any] | None) -> Reply:
        return json_reply(
            200,
            {
                "default_generation_settings": {
                    "id": 0, "id_task": -1, "n_ctx": stand.context, "speculative": False,
                    "is_processing": False, "params": {"n_predict": -1, "temperature": 1.0},
                },
                "total_slots": 1,
                "model_path": "/models/gpt-oss-20b-mxfp4.gguf",
                "chat_template": "{# gpt-oss #}",
                "modalities": {"vision": False, "audio": False},
                "build_info": "b6715-12bbc3fa",
            },
        )  # fmt: skip

    return route


# ------------------------------------------------------------------------------------ vLLM


def _vllm_completions(stand: Stand) -> Route:
    def route(body: dict[str, Any] | None) -> Reply:
        if not body or not body.get("stream"):
            return vllm_raw(body)  # lmc's one-token probe
        prompt = str(body.get("prompt") or "")
        tokens = int(server_tokens(prompt) * stand.scale)
        if tokens >= stand.context:
            stand.refused += 1
            message = (
                f"This model's maximum context length is {stand.context} tokens. However, your "
                f"request has {tokens} input tokens. Please reduce the length of the input "
                "messages. None"
            )
            error = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
            return json_reply(400, {"error": error})
        answer = answer_for(prompt)
        texts = ["<|channel|>", "analysis", "<|message|>", answer.reasoning, "<|end|>", "<|start|>",
                 "assistant", "<|channel|>"]  # fmt: skip
        if answer.code:
            texts += ["analysis", " to=python code", "<|message|>", *split(answer.code, 24)]
        else:
            texts += ["final", "<|message|>", *split(answer.text, 24)]
        events = [_vllm_text(t) for t in texts]
        if stand.dropping(body):
            return 200, "text/event-stream", sse(*events[:3], done=False)
        events.append(_vllm_text("", "stop"))
        usage = {"prompt_tokens": tokens, "total_tokens": tokens + 40, "completion_tokens": 40}
        events.append(
            json.dumps(
                {"id": "cmpl-9c4a8f0e2b7d4b3f9a5e6d7c8b9a0f1e", "object": "text_completion",
                 "created": 1758892077, "model": "openai/gpt-oss-20b", "choices": [],
                 "usage": usage},
                separators=(",", ":"),
            ).encode()
        )  # fmt: skip
        return 200, "text/event-stream", sse(*events)

    return route


def _vllm_models(stand: Stand) -> Route:
    def route(_body: dict[str, Any] | None) -> Reply:
        listing: dict[str, Any] = copy.deepcopy(VLLM_MODELS)
        listing["data"][0]["max_model_len"] = stand.context
        return json_reply(200, listing)

    return route


# -------------------------------------------------------------------------------- serving


def _routes(kind: str, stand: Stand) -> dict[str, Route]:
    if kind == "ollama":
        return _ollama_routes(stand)
    if kind == "lmstudio":
        return {
            "/api/v0/models": _lmstudio_models(stand),
            "/v1/models": lambda _b: json_reply(200, LMS_MODELS),
            "/v1/chat/completions": _lmstudio_chat(stand),
        }
    if kind == "llama.cpp":
        return {
            "/v1/models": lambda _b: json_reply(200, LLAMA_MODELS),
            "/props": _llama_props(stand),
            "/v1/chat/completions": _llama_chat(stand),
        }
    assert kind == "vllm", kind
    return {"/v1/models": _vllm_models(stand), "/v1/completions": _vllm_completions(stand)}


@contextmanager
def stand_in(kind: str, stand: Stand | None = None) -> Iterator[tuple[Recorded, Stand]]:
    """The stand-in for ``kind`` ("ollama", "lmstudio", "llama.cpp", "vllm") on loopback."""
    stand = stand or Stand()
    with serving(_routes(kind, stand)) as record:
        stand.record = record
        yield record, stand


#: The person's request, for the tests.
PERSON: Final = REQUEST
