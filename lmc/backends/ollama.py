"""Ollama's native ``/api/chat``: thinking and tool calls as objects, one JSON line each.

Ollama's raw ``/api/generate`` no longer returns gpt-oss's control tokens, and its ``/v1``
keeps less than its own API: here the reasoning level goes as ``think`` (gpt-oss takes
``low``/``medium``/``high``), reasoning streams in ``message.thinking`` and goes back in the
assistant message's ``thinking``, a call's arguments are an object, and a result names its
tool (``tool_name``). Shapes: ollama/ollama docs/api.md ("Generate a chat completion") and
api/types.go (``Message``, ``ToolCall``, ``ChatResponse``, ``Metrics``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lmc.backends._chatlike import ChatLikeBackend, ServerCall
from lmc.backends._dialogue import HarmonyWriter, Prompt, tool_payload
from lmc.backends._http import ServerAnswer, StreamCut, json_object, split_base
from lmc.backends.base import BackendConfig, Generation, Piece, SamplingSettings, StopReason
from lmc.backends.served import ANSWER_ROOM, NumCtx

if TYPE_CHECKING:
    from lmc.backends._http import HttpResponse

__all__ = ["OllamaBackend"]


def _arguments_object(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {"code": text}
    return data if isinstance(data, dict) else {"value": data}


class OllamaBackend(ChatLikeBackend):
    """gpt-oss in Ollama, through ``/api/chat``.

    Every request names ``options.num_ctx``: Ollama otherwise runs the model at its own
    default (4,096 tokens on most machines) and drops the oldest messages of a longer prompt
    without a word. :class:`lmc.backends.served.NumCtx` sizes it to the conversation.
    """

    dialect = "ollama"

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        self.num_ctx = NumCtx(self.context_size)
        self._need = 0

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        answer = (settings.max_tokens if settings else None) or ANSWER_ROOM
        self._need = self.count_tokens(prompt) + answer
        return super().generate(prompt, settings, cancel)

    def endpoint(self, api_base: str) -> str:
        return f"{split_base(api_base)[0]}/api/chat"

    def body(self, prompt: Prompt, settings: SamplingSettings) -> dict[str, Any]:
        options: dict[str, Any] = {
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "num_ctx": self.num_ctx.size_for(self._need),
        }
        if settings.max_tokens is not None:
            options["num_predict"] = settings.max_tokens
        if (seed := self.seed(settings)) is not None:
            options["seed"] = seed
        body: dict[str, Any] = {
            "messages": self.messages(prompt),
            "stream": True,
            "think": prompt.effort or "medium",
            "options": options,
        }
        if self.config.model:
            body["model"] = self.config.model
        if settings.functions:
            body["tools"] = tool_payload(settings.functions)
        return body

    @staticmethod
    def messages(prompt: Prompt) -> list[dict[str, Any]]:
        """The conversation as /api/chat messages; each call in an assistant message of its
        own with its result after it (why: :meth:`lmc.backends.chat.ChatBackend.messages`)."""
        out: list[dict[str, Any]] = []
        if prompt.instructions:
            out.append({"role": "system", "content": prompt.instructions})
        thinking = ""
        for turn in prompt.turns:
            if turn.kind == "user":
                out.append({"role": "user", "content": turn.text})
            elif turn.kind == "reasoning":
                thinking += turn.text
            elif turn.kind in ("text", "call"):
                last = out[-1] if out else None
                if turn.kind == "call" and last and last["role"] == "assistant" and not thinking:
                    message = last
                else:
                    message = {"role": "assistant", "content": ""}
                    out.append(message)
                if thinking:
                    message["thinking"] = thinking
                    thinking = ""
                if turn.kind == "text":
                    message["content"] = turn.text
                else:
                    function = {"name": turn.name, "arguments": _arguments_object(turn.text)}
                    message["tool_calls"] = [{"id": turn.call_id, "function": function}]
            else:
                out.append(
                    {
                        "role": "tool",
                        "content": turn.text,
                        "tool_name": turn.name,
                        "tool_call_id": turn.call_id,
                    }
                )
        return out

    def stream(
        self, response: HttpResponse, generation: Generation, cancel: threading.Event | None
    ) -> Iterator[Piece]:
        writer = HarmonyWriter()
        calls: list[ServerCall] = []
        done_reason: str | None = None
        lines = 0
        for line in response.iter_lines():
            if cancel is not None and cancel.is_set():
                generation.stop_reason = StopReason.CANCELLED
                return
            if not line.strip():
                continue
            lines += 1
            event = json_object(line)
            message = event.get("message") or {}
            if not isinstance(message, dict):
                raise ServerAnswer(f"sent a message that is not an object: {line[:80]}")
            yield from writer.reason(str(message.get("thinking") or ""))
            yield from writer.answer(str(message.get("content") or ""))
            calls += _named_calls(message)
            if event.get("done"):
                done_reason = _record_done(event, generation)
                break
        if lines == 0:
            raise ServerAnswer("closed the stream without sending anything")
        if done_reason is None:
            raise StreamCut("closed the stream before the answer ended (no line with done)")
        if calls:
            yield from self.write_calls(writer, calls, generation)
            return
        reason = _stop_reason(done_reason, wrote_text=bool(writer.text))
        yield from writer.finish(reason)
        generation.stop_reason = reason


def _named_calls(message: dict[str, Any]) -> list[ServerCall]:
    """The named tool calls of a streamed message, their arguments as JSON."""
    calls: list[ServerCall] = []
    for item in message.get("tool_calls") or []:
        function = item.get("function") if isinstance(item, dict) else None
        if isinstance(function, dict) and function.get("name"):
            arguments = function.get("arguments")
            text = (
                arguments
                if isinstance(arguments, str)
                else json.dumps(arguments or {}, ensure_ascii=False)
            )
            calls.append(ServerCall(str(item.get("id") or ""), str(function["name"]), text))
    return calls


def _record_done(event: dict[str, Any], generation: Generation) -> str:
    """Take the token counts from the last event; its done reason (``stop`` when absent)."""
    generation.prompt_tokens = int(event.get("prompt_eval_count") or 0)
    generation.prompt_tokens_evaluated = generation.prompt_tokens
    generation.completion_tokens = int(event.get("eval_count") or 0)
    return str(event.get("done_reason") or "stop")


def _stop_reason(done_reason: str | None, *, wrote_text: bool) -> StopReason:
    if done_reason == "length":
        return StopReason.MAX_TOKENS
    if done_reason is not None and wrote_text:
        return StopReason.RETURN
    return StopReason.END_OF_STREAM
