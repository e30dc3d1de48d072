"""The renderer protocol and a dispatcher that turns the chunk stream into drawing calls.

A renderer is anything with ``feed(chunk)`` and ``close()``. :class:`BlockRenderer` does the
bookkeeping every drawing renderer needs (which block is open, implicit opens for merged
messages fed whole, console output belonging to the code block above it) and calls one hook
per event, so the rich and the plain renderers differ only in how they draw.

Everything in a chunk was written by the model or its code, so the dispatcher passes every
text it hands a hook through the one sanitizer (:func:`lmc.messages.sanitize.for_terminal`):
a hook never sees a raw escape sequence, C1 control, bidi or zero-width character, and a
renderer built on it cannot forget to clean. (HTML is handed raw: it is saved, not drawn.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from lmc.messages import ChangedFile, Chunk, ConsoleChunk, TextChunk
from lmc.messages.sanitize import for_terminal

__all__ = ["BlockRenderer", "Renderer"]


@runtime_checkable
class Renderer(Protocol):
    """What the agent and the CLI feed chunks to."""

    def feed(self, chunk: Chunk) -> None: ...

    def close(self) -> None: ...


#: Text-like blocks: (role, type) -> block kind.
_TEXT_KINDS = {
    ("assistant", "message"): "message",
    ("assistant", "reasoning"): "reasoning",
    ("user", "message"): "user",
    ("computer", "message"): "note",
}


class BlockRenderer:
    """Dispatches chunks to ``open_*``/``on_*``/``close_block`` hooks; subclasses draw."""

    def __init__(self) -> None:
        #: The open block: "message", "reasoning", "user", "note" (a computer message),
        #: "notice" (console output with no code: lmc's own words) or "code".
        self.block: str | None = None
        self.language: str = ""
        self.in_console = False
        self.final_answer = False  # the stream's last block was an assistant message

    # -- the protocol -------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        if chunk["type"] == "message" or chunk["type"] == "reasoning":
            text_kind = _TEXT_KINDS.get((chunk["role"], chunk["type"]))
            if text_kind is not None:
                self._feed_text(text_kind, chunk)
        elif chunk["type"] == "code" or chunk["type"] == "tool_call":
            # An MCP tool call (format SERVER.TOOL) shows like code: its JSON arguments.
            self._feed_code(chunk["role"], for_terminal(chunk["format"] or "text"), chunk)
        elif chunk["type"] == "confirmation":
            if "content" in chunk:
                block = chunk["content"]
                self.on_confirmation(for_terminal(block["format"]), for_terminal(block["content"]))
        elif chunk["type"] == "console":
            self._feed_console(chunk)
        elif chunk["type"] == "image" and "content" in chunk:
            self.on_image(chunk["format"], chunk["content"])  # saved; its notes are cleaned
        elif chunk["type"] == "files" and "content" in chunk:
            self.on_files([for_terminal(line) for line in file_lines(chunk["content"])])

    def close(self) -> None:
        self._close_open()

    # -- dispatch -----------------------------------------------------------------------
    def _close_open(self) -> None:
        if self.in_console:
            self.in_console = False
            self.on_console_end()
        if self.block is not None:
            block, self.block = self.block, None
            self.close_block(block)

    def _open(self, block: str, language: str = "") -> None:
        self._close_open()
        self.block, self.language = block, language
        if block == "message":
            self.final_answer = True
        elif block in ("code", "note", "notice"):
            self.final_answer = False
        self.open_block(block, language)

    def _feed_text(self, block: str, chunk: TextChunk) -> None:
        if chunk.get("start") or (self.block != block and "content" in chunk):
            self._open(block)
        if chunk.get("content"):
            self.on_text(block, for_terminal(chunk["content"]))
        if chunk.get("end") and self.block == block:
            self._close_open()

    def _feed_code(self, role: str, language: str, chunk: TextChunk) -> None:
        if role == "computer" and language == "html":
            if "content" in chunk:
                self.on_html(chunk["content"])
            return
        if chunk.get("start") or ("content" in chunk and (self.block != "code" or self.in_console)):
            self._open("code", language)
        if chunk.get("content"):
            self.on_text("code", for_terminal(chunk["content"]))
        if chunk.get("end"):
            self.on_code_end()

    def _feed_console(self, chunk: ConsoleChunk) -> None:
        fmt, content = chunk.get("format"), chunk.get("content")
        if self.block == "notice" or (self.block != "code" and not chunk.get("end")):
            self._feed_notice(chunk)
            return
        if chunk.get("start") or (not self.in_console and not chunk.get("end")):
            self.in_console = True
            self.on_console_start()
        if fmt == "active_line":
            self.on_active_line(int(content) if content else None)
        elif fmt == "output" and content:
            self.on_output(for_terminal(content, keep_cr=True))  # progress bars rewrite lines
        elif fmt == "progress" and content:
            self.on_progress(for_terminal(content))
        if chunk.get("end") and self.in_console:
            self.in_console = False
            self.on_console_end()
            self._close_open()

    def _feed_notice(self, chunk: ConsoleChunk) -> None:
        """Console output with no code above it: lmc telling the person (and model) something."""
        if self.block != "notice":
            self._open("notice")
        content = chunk.get("content")
        if chunk.get("format") == "output" and content:
            self.on_text("notice", for_terminal(content))
        if chunk.get("end"):
            self._close_open()

    # -- hooks --------------------------------------------------------------------------
    def open_block(self, block: str, language: str) -> None:
        """A message, reasoning, note, user message or code block begins."""

    def on_text(self, block: str, text: str) -> None:
        """A piece of the open block's text (or code)."""

    def close_block(self, block: str) -> None:
        """The open block is complete."""

    def on_code_end(self) -> None:
        """The model finished writing the open code block."""

    def on_confirmation(self, language: str, code: str) -> None:
        """The code block is about to run (or be asked about)."""

    def on_console_start(self) -> None:
        """The open code block starts running."""

    def on_active_line(self, line: int | None) -> None:
        """The running line changed (None: finished)."""

    def on_output(self, text: str) -> None:
        """A piece of the running code's output."""

    def on_progress(self, status: str) -> None:
        """A running tool call's latest progress (a live status line, replaced by the next)."""

    def on_console_end(self) -> None:
        """The code block finished running."""

    def on_image(self, fmt: str, content: str) -> None:
        """An image the code produced."""

    def on_html(self, content: str) -> None:
        """An HTML document the code produced."""

    def on_files(self, lines: list[str]) -> None:
        """The files the block changed, one line each (``modified  a.py  +3 -1``)."""


def file_lines(content: Sequence[ChangedFile]) -> list[str]:
    """A ``files`` chunk's content as the lines the renderers show."""
    from lmc.workspace.changes import changes_from_content, describe_changes

    return describe_changes(changes_from_content(content))
