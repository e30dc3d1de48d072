"""The Responses API (``/v1/responses``): OpenAI, LM Studio, vLLM, Codex's ``--oss`` transport.

The conversation goes out as input items (messages, ``reasoning`` items with their
``reasoning_text``, ``function_call`` and ``function_call_output`` under the call's id),
statelessly (``store: false``): lmc's Harmony transcript stays the one record. The answer
streams back as typed events (``response.reasoning_text.delta``, ``response.output_text.delta``,
``response.output_item.added``/``done`` for a ``function_call`` and its
``response.function_call_arguments.delta``, then ``response.completed`` with the usage or
``response.incomplete`` / ``response.failed``), as vLLM serves gpt-oss (recorded in
vllm-project/agentic-api crates/agentic-core/tests/cassettes/reasoning/responses/).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lmc.backends._chatlike import ChatLikeBackend, ServerCall
from lmc.backends._dialogue import HarmonyWriter, Prompt, stop_after_answer
from lmc.backends._http import ServerAnswer, json_object, split_base, sse_data
from lmc.backends.base import Generation, Piece, SamplingSettings, StopReason

if TYPE_CHECKING:
    from lmc.backends._http import HttpResponse

__all__ = ["ResponsesBackend"]

_REASONING_DELTAS = ("response.reasoning_text.delta", "response.reasoning_summary_text.delta")


class ResponsesBackend(ChatLikeBackend):
    """gpt-oss behind ``/v1/responses``."""

    dialect = "responses"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        #: Whether the server streams reasoning text (then it takes it back as items).
        self.reasons = False

    def endpoint(self, api_base: str) -> str:
        return f"{split_base(api_base)[1]}/responses"

    def body(self, prompt: Prompt, settings: SamplingSettings) -> dict[str, Any]:
        body: dict[str, Any] = {
            "input": self.items(prompt),
            "stream": True,
            "store": False,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
        }
        if self.config.model:
            body["model"] = self.config.model
        if prompt.instructions:
            body["instructions"] = prompt.instructions
        if settings.max_tokens is not None:
            body["max_output_tokens"] = settings.max_tokens
        if prompt.effort:
            body["reasoning"] = {"effort": prompt.effort}
        if settings.functions:
            body["tools"] = [
                {
                    "type": "function",
                    "name": f.name,
                    "description": f.description,
                    "parameters": dict(f.parameters),
                }
                for f in settings.functions
            ]
        return body

    def items(self, prompt: Prompt) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for index, turn in enumerate(prompt.turns):
            if turn.kind == "user":
                out.append({"type": "message", "role": "user", "content": turn.text})
            elif turn.kind == "text":
                out.append({"type": "message", "role": "assistant", "content": turn.text})
            elif turn.kind == "reasoning":
                if self.reasons:
                    out.append(
                        {
                            "type": "reasoning",
                            "id": f"rs_{index}",
                            "summary": [],
                            "content": [{"type": "reasoning_text", "text": turn.text}],
                        }
                    )
            elif turn.kind == "call":
                out.append(
                    {
                        "type": "function_call",
                        "call_id": turn.call_id,
                        "name": turn.name,
                        "arguments": turn.text,
                    }
                )
            else:
                out.append(
                    {"type": "function_call_output", "call_id": turn.call_id, "output": turn.text}
                )
        return out

    def stream(
        self, response: HttpResponse, generation: Generation, cancel: threading.Event | None
    ) -> Iterator[Piece]:
        writer = HarmonyWriter()
        calls: dict[str, dict[str, str]] = {}  # by output index, in the order they came
        finish: str | None = None
        for data in sse_data(response):
            if cancel is not None and cancel.is_set():
                generation.stop_reason = StopReason.CANCELLED
                return
            if data == "[DONE]":
                break
            event = json_object(data)
            kind = str(event.get("type") or "")
            if kind in _REASONING_DELTAS:
                self.reasons = True
                yield from writer.reason(str(event.get("delta") or ""))
            elif kind == "response.output_text.delta":
                yield from writer.answer(str(event.get("delta") or ""))
            elif kind in ("response.output_item.added", "response.output_item.done"):
                _call_item(event, calls)
            elif kind == "response.function_call_arguments.delta":
                _arguments_delta(event, calls)
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                finish = _finished(event, generation)
                break
        if finish is None:
            raise ServerAnswer("ended the stream before the response completed")
        made = [
            ServerCall(c["call_id"], c["name"], c["arguments"]) for c in calls.values() if c["name"]
        ]
        if made and finish != "length":
            yield from self.write_calls(writer, made, generation)
            return
        reason = stop_after_answer(writer, finish)
        yield from writer.finish(reason)
        generation.stop_reason = reason


def _call_item(event: dict[str, Any], calls: dict[str, dict[str, str]]) -> None:
    """A ``function_call`` output item, kept under its output index; once it is done its
    arguments are complete."""
    item = event.get("item")
    if not isinstance(item, dict) or item.get("type") != "function_call":
        return
    key = str(event.get("output_index", item.get("id") or len(calls)))
    call = calls.setdefault(key, {"call_id": "", "name": "", "arguments": ""})
    call["call_id"] = str(item.get("call_id") or call["call_id"])
    call["name"] = str(item.get("name") or call["name"])
    if isinstance(item.get("arguments"), str) and item["arguments"]:
        call["arguments"] = item["arguments"]


def _arguments_delta(event: dict[str, Any], calls: dict[str, dict[str, str]]) -> None:
    """A piece of a call's arguments, for the call at its output index (the last one begun
    when the event names none)."""
    index = event.get("output_index")
    call = calls.get(str(index)) if index is not None else calls.get(next(reversed(calls), ""))
    if call is not None:
        call["arguments"] += str(event.get("delta") or "")


def _finished(event: dict[str, Any], generation: Generation) -> str:
    """The response's end: counts its usage; "length" when it stopped at the token limit."""
    response = event.get("response") if isinstance(event.get("response"), dict) else {}
    assert isinstance(response, dict)
    if event.get("type") == "response.failed":
        error = response.get("error") or {}
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerAnswer(f"reported an error: {str(message or 'the response failed')[:300]}")
    usage = response.get("usage")
    if isinstance(usage, dict):
        generation.prompt_tokens = int(usage.get("input_tokens") or 0)
        generation.prompt_tokens_evaluated = generation.prompt_tokens
        generation.completion_tokens = int(usage.get("output_tokens") or 0)
        details = usage.get("output_tokens_details")
        if isinstance(details, dict):
            generation.reasoning_tokens = int(details.get("reasoning_tokens") or 0)
    incomplete = response.get("incomplete_details")
    if isinstance(incomplete, dict) and incomplete.get("reason") == "max_output_tokens":
        return "length"
    return "stop"
