"""Constructors of the chunks lmc itself writes most often (the computer's console)."""

from __future__ import annotations

from lmc.messages.types import ConsoleChunk, MessageChunk

__all__ = ["active_line", "console_end", "console_output", "console_start", "note"]


def console_start() -> ConsoleChunk:
    return {"role": "computer", "type": "console", "start": True}


def console_end() -> ConsoleChunk:
    return {"role": "computer", "type": "console", "end": True}


def console_output(text: str) -> ConsoleChunk:
    return {"role": "computer", "type": "console", "format": "output", "content": text}


def active_line(line: int | None) -> ConsoleChunk:
    """The line now running (None: no line runs any more)."""
    content = None if line is None else str(line)
    return {"role": "computer", "type": "console", "format": "active_line", "content": content}


def note(text: str) -> MessageChunk:
    """A message from lmc itself (a computer message), not the model's."""
    return {"role": "computer", "type": "message", "content": text}
