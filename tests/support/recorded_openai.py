"""Chat Completions and raw completions as vLLM, llama.cpp's server, LM Studio and a
key-protected hosted endpoint send them. Each shape says where it comes from: a capture
(recorded by someone, quoted), or assembled from the server's source at a named version."""

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

# --------------------------------------------------------------------------------- vLLM
# Chat chunks, assembled. vLLM's ChatCompletionStreamResponse / DeltaMessage {role, content,
# reasoning, tool_calls} (vllm-project/vllm vllm/entrypoints/openai/chat_completion/
# protocol.py, main of 2026), written without unset fields. The reasoning field is
# "reasoning" since PR #27752 (v0.11.1, Nov 2025); PR #33402 (Jan 2026) removed the old name
# "reasoning_content", which vLLM 0.10 streamed (vllm_chat_0_10 below). The envelope (ids,
# "token_ids":null, "stop_reason":null) follows the gpt-oss-20b stream quoted in vLLM PR
# #25514; the role, tool-call and finish chunks follow a vLLM capture of another model
# (g0t4/ask-openai.nvim lua/ask-openai/tools/vllm-qwen.md, a Qwen stream): a first
# tool_calls delta with id "chatcmpl-tool-…", type and name, then argument pieces, then
# finish_reason "tool_calls"; with stream_options.include_usage a last chunk has
# "choices":[] and UsageInfo (prompt_tokens, total_tokens, completion_tokens).

_VLLM_ID = "chatcmpl-beb39e7777184d59a9463d42e86d9ba2"
_VLLM_MODEL = "openai/gpt-oss-20b"


def _vllm_chunk(choice: str) -> bytes:
    return (
        f'{{"id":"{_VLLM_ID}","object":"chat.completion.chunk","created":1758892077,'
        f'"model":"{_VLLM_MODEL}","choices":[{choice}]}}'
    ).encode()


def _vllm_usage(prompt: int, completion: int) -> bytes:
    return (
        f'{{"id":"{_VLLM_ID}","object":"chat.completion.chunk","created":1758892077,'
        f'"model":"{_VLLM_MODEL}","choices":[],"usage":{{"prompt_tokens":{prompt},'
        f'"total_tokens":{prompt + completion},"completion_tokens":{completion}}}}}'
    ).encode()


def vllm_chat(body: dict[str, Any] | None, fields: tuple[str, ...] = ("reasoning",)) -> Reply:
    """vLLM 0.11.1 and later (``fields=("reasoning_content",)``: vLLM 0.10; both names: a
    server that sends the reasoning twice, as mlx-vlm's does since its PR #1411)."""
    events = [
        _vllm_chunk(
            '{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}'
        )
    ]
    reasoning = AFTER if tool_result_seen(body) else REASONING
    for piece in split(reasoning):
        delta = json.dumps(dict.fromkeys(fields, piece))
        events.append(
            _vllm_chunk(
                f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null,"token_ids":null}}'
            )
        )
    if tool_result_seen(body):
        for piece in split(ANSWER):
            delta = json.dumps({"content": piece})
            events.append(
                _vllm_chunk(
                    f'{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null,"token_ids":null}}'
                )
            )
        events.append(
            _vllm_chunk(
                '{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}'
            )
        )
    else:
        events.append(
            _vllm_chunk(
                '{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-ca99dda515524c6abe47d1ea22813507","type":"function","index":0,"function":{"name":"python"}}]},"logprobs":null,"finish_reason":null}'
            )
        )
        for piece in ['{"code": "', "print(6", "*7)", '"}']:
            args = json.dumps(piece)
            events.append(
                _vllm_chunk(
                    f'{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{args}}}}}]}},"logprobs":null,"finish_reason":null}}'
                )
            )
        events.append(
            _vllm_chunk(
                '{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}'
            )
        )
    events.append(_vllm_usage(120, 24))
    return 200, "text/event-stream", sse(*events)


def vllm_chat_0_10(body: dict[str, Any] | None) -> Reply:
    return vllm_chat(body, ("reasoning_content",))


# vLLM /v1/completions (assembled) with skip_special_tokens false: the text keeps Harmony's
# markers but not the stop token; CompletionResponseStreamChoice is index, text, logprobs,
# finish_reason, stop_reason (vllm/entrypoints/openai/protocol.py), and the usage-only last
# chunk (include_usage) has "choices":[] — the chunk that used to overwrite the finish.


def _vllm_text(text: str, finish: str | None = None) -> bytes:
    finish_json = json.dumps(finish)
    return (
        '{"id":"cmpl-9c4a8f0e2b7d4b3f9a5e6d7c8b9a0f1e","object":"text_completion",'
        f'"created":1758892077,"model":"{_VLLM_MODEL}","choices":[{{"index":0,'
        f'"text":{json.dumps(text)},"logprobs":null,"finish_reason":{finish_json},'
        '"stop_reason":null}]}'
    ).encode()


def vllm_raw(body: dict[str, Any] | None) -> Reply:
    if body and not body.get("stream"):  # lmc's probe: one token, pushed to <|channel|>
        # A whole CompletionResponse: choices (+ prompt_logprobs), then usage.
        answer = (
            '{"id":"cmpl-5f0a9b8c7d6e4f3a2b1c0d9e8f7a6b5c","object":"text_completion",'
            '"created":1758892077,"model":"openai/gpt-oss-20b","choices":[{"index":0,'
            '"text":"<|channel|>","logprobs":null,"finish_reason":"length","stop_reason":null,'
            '"prompt_logprobs":null}],"usage":{"prompt_tokens":9,"total_tokens":10,'
            '"completion_tokens":1,"prompt_tokens_details":null},"kv_transfer_params":null}'
        )
        return 200, "application/json", [answer.encode()]
    if tool_result_seen(body):
        events = [
            _vllm_text(t)
            for t in ["<|channel|>", "analysis", "<|message|>", AFTER, "<|end|>", "<|start|>",
                      "assistant", "<|channel|>", "final", "<|message|>", ANSWER]
        ]  # fmt: skip
        events.append(_vllm_text("", "stop"))
    else:
        events = [
            _vllm_text(t)
            for t in ["<|channel|>", "analysis", "<|message|>", REASONING, "<|end|>", "<|start|>",
                      "assistant", "<|channel|>", "analysis", " to=python code", "<|message|>",
                      CODE]
        ]  # fmt: skip
        events.append(_vllm_text("", "stop"))
    usage = (
        b'{"id":"cmpl-9c4a8f0e2b7d4b3f9a5e6d7c8b9a0f1e","object":"text_completion",'
        b'"created":1758892077,"model":"openai/gpt-oss-20b","choices":[],'
        b'"usage":{"prompt_tokens":150,"total_tokens":170,"completion_tokens":20}}'
    )
    events.append(usage)
    return 200, "text/event-stream", sse(*events)


# vLLM's model list: ModelList / ModelCard (object "list"; id, object "model", created,
# owned_by "vllm", root, parent, max_model_len, permission) in vllm's protocol.py.
VLLM_MODELS = {
    "object": "list",
    "data": [
        {
            "id": _VLLM_MODEL,
            "object": "model",
            "created": 1758892000,
            "owned_by": "vllm",
            "root": _VLLM_MODEL,
            "parent": None,
            "max_model_len": 131072,
            "permission": [],
        }
    ],
}


# ------------------------------------------------------------------------ llama.cpp server
# Chat chunks, assembled from ggml-org/llama.cpp tools/server/server-task.cpp (00efb3e1,
# 2026: server_task_result_cmpl_partial::to_json_oaicompat_chat and
# server_task_result_cmpl_final::to_json_oaicompat_chat_stream) and common/chat.cpp
# (common_chat_msg_diff_to_json_oaicompat), keys in the order its ordered_json writes them:
# "choices" first, each choice {"finish_reason","index","delta"}, then created, id, model,
# system_fingerprint "bNNNN-hash" and object. The first chunk is the role alone
# ({"role":"assistant","content":null}); reasoning comes in "reasoning_content"; a call's
# first delta has index, id, type and the name with "arguments":"", later ones the
# arguments; the finish chunk has an empty delta; with stream_options.include_usage a last
# chunk has "choices":[] and the usage, with "timings" (result_timings::to_json) after it.
# Envelope values (ids, fingerprint, timings) from the stream recorded in openai-php/client
# issue #780. Its /v1/models adds an Ollama-style "models" list before "object":"list",
# "data":[…] with "owned_by":"llamacpp".

_LLAMA_TIMINGS = (
    '"timings":{"cache_n":7,"prompt_n":10,"prompt_ms":251.51,"prompt_per_token_ms":25.151,'
    '"prompt_per_second":39.75985050296211,"predicted_n":28,"predicted_ms":407.596,'
    '"predicted_per_token_ms":14.557,"predicted_per_second":68.69547296833139}'
)


def _llama_chunk(choices: str, tail: str = "") -> bytes:
    return (
        f'{{"choices":[{choices}],"created":1781492230,'
        '"id":"chatcmpl-qC6laQHbZ2CmxNvJ4NoB1L93LcVF7nfe","model":"gpt-oss-20b",'
        f'"system_fingerprint":"b9554-d403f00ec","object":"chat.completion.chunk"{tail}}}'
    ).encode()


def _llama_delta(delta: dict[str, Any], finish: str | None = None) -> bytes:
    text = json.dumps(delta, separators=(",", ":"))
    return _llama_chunk(f'{{"finish_reason":{json.dumps(finish)},"index":0,"delta":{text}}}')


def llama_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    events = [_llama_delta({"role": "assistant", "content": None})]
    events += [_llama_delta({"reasoning_content": p}) for p in split(AFTER if seen else REASONING)]
    if seen:
        events += [_llama_delta({"content": p}) for p in split(ANSWER)]
    else:
        call = {"index": 0, "id": "Xyz3KdXqv2WbGJ7rT1cZp8sLm4nQe9aF", "type": "function",
                "function": {"name": "python", "arguments": ""}}  # fmt: skip
        events.append(_llama_delta({"tool_calls": [call]}))
        for piece in ['{"code":"', "print(6*7)", '"}']:
            piece_call = {"index": 0, "function": {"arguments": piece}}
            events.append(_llama_delta({"tool_calls": [piece_call]}))
    events.append(_llama_delta({}, "stop" if seen else "tool_calls"))
    if body and (body.get("stream_options") or {}).get("include_usage"):
        usage = ',"usage":{"completion_tokens":28,"prompt_tokens":10,"total_tokens":38}'
        events.append(_llama_chunk("", f"{usage},{_LLAMA_TIMINGS}"))
    return 200, "text/event-stream", sse(*events)


LLAMA_MODELS = {
    "models": [
        {
            "name": "gpt-oss-20b",
            "model": "gpt-oss-20b",
            "modified_at": "",
            "size": "",
            "digest": "",
            "type": "model",
            "description": "",
            "tags": [""],
            "capabilities": ["completion"],
            "parameters": "",
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "",
                "families": [""],
                "parameter_size": "",
                "quantization_level": "",
            },
        }
    ],
    "object": "list",
    "data": [
        {
            "id": "gpt-oss-20b",
            "aliases": ["gpt-oss-20b"],
            "tags": [],
            "object": "model",
            "created": 1791285731,
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 201088, "n_ctx": 131072, "n_ctx_train": 131072},
        }
    ],
}


# -------------------------------------------------------------------------------- LM Studio
# LM Studio 0.3.23+ (closed source: captures only). Chunks as it writes them (captured in
# lmstudio-ai/lmstudio-bug-tracker issue #723): id "chatcmpl-…", object, created, model,
# system_fingerprint (the model id), choices [{index, delta, logprobs, finish_reason}], the
# role in every delta. Since 0.3.23 gpt-oss's reasoning comes in "reasoning" (issue #894, a
# captured gpt-oss-20b answer with "system_fingerprint":"openai/gpt-oss-20b"); a stream
# carries no usage, the finish chunk is the last (lmstudio-js issue #320, a capture).
# /api/v0/models is LM Studio's own REST API (lmstudio-ai/docs
# 1_developer/2_rest/endpoints.mdx). Assembled: a tool call's deltas, OpenAI's streamed tool
# call fields (index, id, type, function {name, arguments}) inside LM Studio's envelope.

_LMS_MODEL = "openai/gpt-oss-20b"


def _lms_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return (
        '{"id":"chatcmpl-ort00z7fbtfpt1z3w0oai","object":"chat.completion.chunk",'
        f'"created":1751032747,"model":"{_LMS_MODEL}","system_fingerprint":"{_LMS_MODEL}",'
        f'"choices":[{{"index":0,"delta":{json.dumps(delta, separators=(",", ":"))},'
        f'"logprobs":null,"finish_reason":{json.dumps(finish)}}}]}}'
    ).encode()


def lmstudio_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    events = [
        _lms_chunk({"role": "assistant", "reasoning": p})
        for p in split(AFTER if seen else REASONING)
    ]
    if seen:
        events += [_lms_chunk({"role": "assistant", "content": p}) for p in split(ANSWER)]
        events.append(_lms_chunk({}, "stop"))
    else:
        call = {
            "index": 0,
            "id": "365174485",
            "type": "function",
            "function": {"name": "python", "arguments": ""},
        }
        events.append(_lms_chunk({"role": "assistant", "tool_calls": [call]}))
        for piece in ['{"code":"', "print(6*7)", '"}']:
            events.append(
                _lms_chunk(
                    {
                        "role": "assistant",
                        "tool_calls": [{"index": 0, "function": {"arguments": piece}}],
                    }
                )
            )
        events.append(_lms_chunk({}, "tool_calls"))
    return 200, "text/event-stream", sse(*events)


LMS_V0_MODELS = {
    "object": "list",
    "data": [
        {
            "id": _LMS_MODEL,
            "object": "model",
            "type": "llm",
            "publisher": "openai",
            "arch": "gpt-oss",
            "compatibility_type": "gguf",
            "quantization": "MXFP4",
            "state": "loaded",
            "max_context_length": 131072,
        },
        {
            "id": "text-embedding-nomic-embed-text-v1.5",
            "object": "model",
            "type": "embeddings",
            "publisher": "nomic-ai",
            "arch": "nomic-bert",
            "compatibility_type": "gguf",
            "quantization": "Q4_0",
            "state": "not-loaded",
            "max_context_length": 2048,
        },
    ],
}
LMS_MODELS = {
    "data": [
        {"id": _LMS_MODEL, "object": "model", "owned_by": "organization_owner"},
        {
            "id": "text-embedding-nomic-embed-text-v1.5",
            "object": "model",
            "owned_by": "organization_owner",
        },
    ],
    "object": "list",
}


# ---------------------------------------------------------------------- hosted (OpenAI-style)
# A key-protected host: a wrong or missing key gets OpenAI's 401 body
# ({"error":{"message","type":"invalid_request_error","param":null,"code":"invalid_api_key"}},
# platform.openai.com/docs/guides/error-codes). Assembled from OpenAI's documentation: id, object,
# created, model, system_fingerprint, choices [{index, delta, logprobs, finish_reason}], the
# first delta {"role":"assistant","content":"","refusal":null}, a tool call's first delta
# {"index":0,"id":"call_…","type":"function","function":{"name","arguments":""}} and the
# arguments after it (platform.openai.com/docs/guides/function-calling, "Streaming"), and
# gpt-oss's reasoning in "reasoning" as hosts serving it send it (LibreChat-AI/agents PR
# #217: a Vercel AI Gateway openai/gpt-oss-120b stream with delta.reasoning). /v1/completions
# is not served for it (404).

HOSTED_KEY = "sk-test-4f1c2e9b7a6d"
HOSTED_401 = {
    "error": {
        "message": "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}


def _hosted_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return (
        '{"id":"chatcmpl-B0C6D9giMRpcvf47g471wxJvpCu0I","object":"chat.completion.chunk",'
        '"created":1739386209,"model":"gpt-oss-120b","system_fingerprint":"fp_72ed7ab54c",'
        f'"choices":[{{"index":0,"delta":{json.dumps(delta, separators=(",", ":"))},'
        f'"logprobs":null,"finish_reason":{json.dumps(finish)}}}]}}'
    ).encode()


def hosted_chat(body: dict[str, Any] | None) -> Reply:
    seen = tool_result_seen(body)
    events = [_hosted_chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [_hosted_chunk({"reasoning": p}) for p in split(AFTER if seen else REASONING)]
    if seen:
        events += [_hosted_chunk({"content": p}) for p in split(ANSWER)]
        events.append(_hosted_chunk({}, "stop"))
    else:
        call = {
            "index": 0,
            "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA",
            "type": "function",
            "function": {"name": "python", "arguments": ""},
        }
        events.append(_hosted_chunk({"tool_calls": [call]}))
        for piece in ['{"', "code", '":"', "print(6*7)", '"}']:
            events.append(
                _hosted_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            )
        events.append(_hosted_chunk({}, "tool_calls"))
    return 200, "text/event-stream", sse(*events)


HOSTED_MODELS = {
    "object": "list",
    "data": [
        {"id": "gpt-oss-120b", "object": "model", "created": 1754352000, "owned_by": "openai"},
        {"id": "gpt-oss-20b", "object": "model", "created": 1754352000, "owned_by": "openai"},
    ],
}
