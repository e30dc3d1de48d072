"""Chat Completions (``/v1/chat/completions``): Ollama's /v1, LM Studio, vLLM, llama.cpp's
server and hosted providers.

lmc's tools go out as JSON-Schema functions, each call result as a ``tool`` message with its
call's id. Servers name the reasoning differently and have changed it over time
(``reasoning_content``: llama.cpp, vLLM 0.10, older LM Studio; ``reasoning``: vLLM 0.11.1+,
LM Studio 0.3.23+, Ollama's /v1, OpenRouter-style hosts; ``thinking`` elsewhere): any of them
is read, and reasoning within a turn goes back under the name the server used (``reasoning``
when it sent both: vLLM 0.11.1+ reads only that one back). A usage-only
chunk after the last choice (``stream_options.include_usage``) carries counts, never a stop.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from lmc.backends._chatlike import ChatLikeBackend, ServerCall
from lmc.backends._dialogue import (
    HarmonyWriter,
    Prompt,
    stop_after_answer,
    tool_payload,
)
from lmc.backends._http import ServerAnswer, StreamCut, json_object, split_base, sse_data
from lmc.backends.base import Generation, Piece, SamplingSettings, StopReason
from lmc.backends.openai_server import count_usage

if TYPE_CHECKING:
    from lmc.backends._http import HttpResponse

__all__ = ["REASONING_FIELDS", "ChatBackend"]

#: Where servers put the reasoning, in the order they are looked for (one name is read: a
#: server that sends both would otherwise show it twice).
REASONING_FIELDS: Final = ("reasoning", "reasoning_content", "thinking")


@dataclass(slots=True)
class _ToolCall:
    index: int = 0
    call_id: str = ""
    name: str = ""
    arguments: str = ""


class _Calls:
    """The tool calls of one answer, put together from their deltas.

    A delta names its call by ``index``; a delta that starts a call with a new id where
    another call already began under that index starts another call: Ollama's /v1 sent its
    calls without an index (ollama/ollama issue #7881), each whole in its own chunk, so every
    one of them reads as index 0.
    """

    def __init__(self) -> None:
        self.began: list[_ToolCall] = []
        self._by_index: dict[int, _ToolCall] = {}

    def add(self, item: dict[str, Any]) -> None:
        index = int(item.get("index") or 0)
        call_id = str(item.get("id") or "")
        call = self._by_index.get(index)
        if call is None or (call_id and call.call_id and call_id != call.call_id):
            call = self._by_index[index] = _ToolCall(index)
            self.began.append(call)
        call.call_id = call_id or call.call_id
        function = item.get("function") or {}
        call.name += str(function.get("name") or "") if not call.name else ""
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments += arguments
        elif isinstance(arguments, dict):
            call.arguments = json.dumps(arguments, ensure_ascii=False)

    def named(self) -> list[ServerCall]:
        """The calls with a name, by index (those under one index in the order they began)."""
        ordered = sorted(self.began, key=lambda c: c.index)
        return [ServerCall(c.call_id, c.name, c.arguments) for c in ordered if c.name]


class ChatBackend(ChatLikeBackend):
    """gpt-oss behind ``/v1/chat/completions``."""

    dialect = "chat"

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        #: The field the server streamed reasoning in (None until it did).
        self.reasoning_field: str | None = None

    def endpoint(self, api_base: str) -> str:
        return f"{split_base(api_base)[1]}/chat/completions"

    # -- the request -------------------------------------------------------------------------

    def body(self, prompt: Prompt, settings: SamplingSettings) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": self.messages(prompt),
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": settings.temperature,
            "top_p": settings.top_p,
        }
        if self.config.model:
            body["model"] = self.config.model
        if settings.max_tokens is not None:
            body["max_tokens"] = settings.max_tokens
        if (seed := self.seed(settings)) is not None:
            body["seed"] = seed
        if prompt.effort:
            body["reasoning_effort"] = prompt.effort
        if settings.functions:
            body["tools"] = tool_payload(settings.functions)
        return body

    def messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        """The conversation as Chat Completions messages.

        Each call goes back in an assistant message of its own, followed by its ``tool``
        message, even when the server made several in one: gpt-oss's chat template (the
        ``chat_template.jinja`` of openai/gpt-oss-20b, which vLLM, llama.cpp's server and LM
        Studio apply) renders only ``tool_calls[0]`` of a message and names each result after
        the call before it, so a message carrying two calls would lose the second. The shape
        is one the API accepts: every ``tool_call_id`` is answered by a ``tool`` message.
        """
        out: list[dict[str, Any]] = []
        if prompt.instructions:
            out.append({"role": "system", "content": prompt.instructions})
        reasoning = ""
        for turn in prompt.turns:
            if turn.kind == "user":
                out.append({"role": "user", "content": turn.text})
            elif turn.kind == "reasoning":
                reasoning += turn.text
            elif turn.kind == "text":
                out.append(self._assistant(turn.text, reasoning))
                reasoning = ""
            elif turn.kind == "call":
                call = {
                    "id": turn.call_id,
                    "type": "function",
                    "function": {"name": turn.name, "arguments": turn.text},
                }
                last = out[-1] if out else None
                if (
                    last
                    and last["role"] == "assistant"
                    and "tool_calls" not in last
                    and not reasoning
                ):
                    last["tool_calls"] = [call]
                else:
                    message = self._assistant("", reasoning)
                    message["tool_calls"] = [call]
                    out.append(message)
                reasoning = ""
            else:
                out.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.text})
        return out

    def _assistant(self, text: str, reasoning: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning and self.reasoning_field:
            message[self.reasoning_field] = reasoning
        return message

    # -- the answer --------------------------------------------------------------------------

    def stream(
        self, response: HttpResponse, generation: Generation, cancel: threading.Event | None
    ) -> Iterator[Piece]:
        writer = HarmonyWriter()
        calls = _Calls()
        finish: str | None = None
        events, done = 0, False
        for data in sse_data(response):
            if cancel is not None and cancel.is_set():
                generation.stop_reason = StopReason.CANCELLED
                return
            events += 1
            if data == "[DONE]":
                done = True
                break
            event = json_object(data)
            if isinstance(event.get("usage"), dict):
                count_usage(generation, event["usage"])
            choices = event.get("choices")
            if not isinstance(choices, list):
                raise ServerAnswer(f"sent an event without choices: {json.dumps(event)[:80]}")
            if not choices or not isinstance(choices[0], dict):
                continue  # the usage-only chunk
            choice = choices[0]
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise ServerAnswer(f"sent a delta that is not an object: {json.dumps(choice)[:80]}")
            yield from self._delta(delta, writer, calls)
        if events == 0:
            raise ServerAnswer("closed the stream without sending any event")
        if not done and finish is None:
            raise StreamCut("closed the stream before the answer ended (no finish, no [DONE])")
        yield from self._end(writer, calls, finish, generation)

    def _delta(
        self, delta: dict[str, Any], writer: HarmonyWriter, calls: _Calls
    ) -> Iterator[Piece]:
        for name in REASONING_FIELDS:
            text = delta.get(name)
            if isinstance(text, str) and text:
                self.reasoning_field = name
                yield from writer.reason(text)
                break
        content = delta.get("content")
        if isinstance(content, str):
            yield from writer.answer(content)
        for item in delta.get("tool_calls") or []:
            if isinstance(item, dict):
                calls.add(item)

    def _end(
        self,
        writer: HarmonyWriter,
        calls: _Calls,
        finish: str | None,
        generation: Generation,
    ) -> Iterator[Piece]:
        named = calls.named()
        if named and finish != "length":  # a call cut off by the token limit is not run
            yield from self.write_calls(writer, named, generation)
            return
        reason = stop_after_answer(writer, finish)
        yield from writer.finish(reason)
        generation.stop_reason = reason
