"""Assembly of a chunk stream into the merged messages Open Interpreter keeps.

Consecutive content chunks with the same role, type and format merge into one message; a
``start`` or ``end`` flag closes the current message so the next chunk begins a new one.
Flags, ``active_line`` chunks and confirmations are events, not history, and are not stored.
Images are whole in one chunk, so they never merge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from lmc.errors import MessageError
from lmc.messages.schema import validate_chunk, validate_message, without_flags
from lmc.messages.types import Chunk, Message

__all__ = ["MessageAssembler", "assemble", "messages_from_json", "messages_to_json"]

_UNMERGED_TYPES = frozenset({"image", "audio", "files", "job"})


class MessageAssembler:
    """Feeds on chunks, keeps the merged messages in :attr:`messages`."""

    def __init__(self, messages: list[Message] | None = None) -> None:
        self.messages: list[Message] = messages if messages is not None else []
        self._open = False

    def add(self, chunk: Chunk) -> Message | None:
        """Merge one chunk; return the message it went into (None for events)."""
        validate_chunk(chunk)
        if chunk.get("start") or chunk.get("end"):
            self._open = False
            if "content" not in chunk:
                return None
        if chunk["type"] == "confirmation" or chunk.get("format") == "active_line":
            return None
        last = self.messages[-1] if self.messages and self._open else None
        if last is not None and _merged(last, chunk):
            return last
        message = without_flags(chunk)
        self.messages.append(message)
        self._open = chunk["type"] not in _UNMERGED_TYPES
        return message

    def close(self) -> None:
        """End the current message so the next chunk starts a new one."""
        self._open = False


def _merged(last: Message, chunk: Chunk) -> bool:
    """Append ``chunk``'s text to ``last`` if it continues it (same role, type and format)."""
    if (last["role"], last["type"], last.get("format")) != (
        chunk["role"],
        chunk["type"],
        chunk.get("format"),
    ):
        return False
    if last["type"] in ("message", "reasoning", "code", "tool_call", "console"):
        text, more = last.get("content"), chunk.get("content")
        if isinstance(text, str) and isinstance(more, str):
            last["content"] = text + more
            return True
    return False


def assemble(chunks: Iterable[Chunk]) -> list[Message]:
    """Merge a whole chunk stream into messages."""
    assembler = MessageAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.messages


def messages_to_json(messages: Iterable[Message]) -> str:
    """Serialise messages as a JSON list (UTF-8 kept readable)."""
    return json.dumps([validate_message(m) for m in messages], ensure_ascii=False)


def messages_from_json(text: str) -> list[Message]:
    """Parse and validate a JSON list of LMC messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MessageError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(data, list):
        raise MessageError("LMC messages JSON must be a list")
    return [validate_message(m) for m in data]
