"""What a call's run leaves behind: its chunks for the person, its messages for the history and
the text the model reads. Shared by code blocks (:mod:`lmc.agent.loop`) and tool calls
(:mod:`lmc.agent.tool_calls`), so neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lmc.agent.history import tool_result_text
from lmc.harmony.events import Header
from lmc.messages import Chunk, ConsoleChunk, Message, MessageChunk, without_flags

if TYPE_CHECKING:
    from lmc.computer.output import BoundedOutput

__all__ = [
    "PendingCall",
    "RunOutput",
    "console_chunks",
    "note_chunks",
    "note_message",
    "output_message",
]


def console_chunks(text: str) -> list[ConsoleChunk]:
    return [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "output", "content": text},
        {"role": "computer", "type": "console", "end": True},
    ]


def note_chunks(text: str) -> list[MessageChunk]:
    return [
        {"role": "computer", "type": "message", "start": True},
        {"role": "computer", "type": "message", "content": text},
        {"role": "computer", "type": "message", "end": True},
    ]


def note_message(text: str) -> MessageChunk:
    return {"role": "computer", "type": "message", "content": text}


def output_message(text: str) -> ConsoleChunk:
    return {"role": "computer", "type": "console", "format": "output", "content": text}


@dataclass(slots=True)
class PendingCall:
    """A message that ended in ``<|call|>``."""

    header: Header
    text: str  # the content as the model wrote it (raw code or JSON arguments)
    entry: int | None  # index of its code entry; None when it showed nothing (unknown tool)
    pending: str = ""  # Harmony text of the call not yet recorded (when it showed nothing)


class RunOutput:
    """A run's computer chunks as history messages and as the text the model reads.

    Memory stays bounded however much is printed: output text goes through
    :class:`~lmc.computer.output.BoundedOutput` for the history and for the model.
    """

    def __init__(self, model_limit: int, history_limit: int) -> None:
        from lmc.computer.output import BoundedOutput

        self._history_limit = history_limit
        self.for_model = BoundedOutput(model_limit)
        self.messages: list[Message] = []
        self._output: BoundedOutput | None = None

    def add(self, chunk: Chunk) -> None:
        if "content" not in chunk or chunk.get("format") == "active_line":
            return
        if chunk["type"] == "console" and chunk.get("format") == "output":
            if self._output is None:
                self._output = self._new_output()
            self._output.add(chunk["content"] or "")
            self.for_model.add(chunk["content"] or "")
            return
        self._close_output()
        message = without_flags(chunk)
        self.messages.append(message)
        self.for_model.add(tool_result_text([message]))

    def note(self, text: str) -> None:
        """Output the loop adds itself (an interruption)."""
        if self._output is None:
            self._output = self._new_output()
        self._output.add(text)
        self.for_model.add(text)

    def _new_output(self) -> BoundedOutput:
        from lmc.computer.output import BoundedOutput

        return BoundedOutput(self._history_limit)

    def _close_output(self) -> None:
        if self._output is not None:
            self.messages.append(output_message(self._output.text()))
            self._output = None

    def finish(self) -> list[Message]:
        self._close_output()
        return self.messages or [output_message("")]
