"""The renderer protocol and a dispatcher that turns the chunk stream into drawing calls.

A renderer is anything with ``feed(chunk)`` and ``close()``. :class:`BlockRenderer` does the
bookkeeping every drawing renderer needs (which block is open, implicit opens for merged
messages fed whole, console output belonging to the code block above it) and calls one hook
per event, so the rich and the plain renderers differ only in how they draw.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from lmc.messages import Chunk

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
        role, kind, fmt = chunk.get("role"), chunk.get("type"), chunk.get("format")
        text_kind = _TEXT_KINDS.get((str(role), str(kind)))
        if text_kind is not None:
            self._feed_text(text_kind, chunk)
        elif kind in ("code", "tool_call"):
            # An MCP tool call (format SERVER.TOOL) shows like code: its JSON arguments.
            self._feed_code(str(role), str(fmt or "text"), chunk)
        elif kind == "confirmation":
            content: dict[str, Any] = chunk.get("content") or {}
            self.on_confirmation(str(content.get("format", "")), str(content.get("content", "")))
        elif kind == "console":
            self._feed_console(fmt, chunk)
        elif kind == "image" and "content" in chunk:
            self.on_image(str(fmt), str(chunk["content"]))
        elif kind == "files" and isinstance(chunk.get("content"), list):
            self.on_files(file_lines(chunk["content"]))

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

    def _feed_text(self, block: str, chunk: Chunk) -> None:
        if chunk.get("start") or (self.block != block and "content" in chunk):
            self._open(block)
        if chunk.get("content"):
            self.on_text(block, str(chunk["content"]))
        if chunk.get("end") and self.block == block:
            self._close_open()

    def _feed_code(self, role: str, language: str, chunk: Chunk) -> None:
        if role == "computer" and language == "html":
            if "content" in chunk:
                self.on_html(str(chunk["content"]))
            return
        if chunk.get("start") or ("content" in chunk and (self.block != "code" or self.in_console)):
            self._open("code", language)
        if chunk.get("content"):
            self.on_text("code", str(chunk["content"]))
        if chunk.get("end"):
            self.on_code_end()

    def _feed_console(self, fmt: object, chunk: Chunk) -> None:
        if self.block == "notice" or (self.block != "code" and not chunk.get("end")):
            self._feed_notice(fmt, chunk)
            return
        if chunk.get("start") or (not self.in_console and not chunk.get("end")):
            self.in_console = True
            self.on_console_start()
        if fmt == "active_line":
            content = chunk.get("content")
            self.on_active_line(int(content) if content else None)
        elif fmt == "output" and chunk.get("content"):
            self.on_output(str(chunk["content"]))
        elif fmt == "progress" and chunk.get("content"):
            self.on_progress(str(chunk["content"]))
        if chunk.get("end") and self.in_console:
            self.in_console = False
            self.on_console_end()
            self._close_open()

    def _feed_notice(self, fmt: object, chunk: Chunk) -> None:
        """Console output with no code above it: lmc telling the person (and model) something."""
        if self.block != "notice":
            self._open("notice")
        if fmt == "output" and chunk.get("content"):
            self.on_text("notice", str(chunk["content"]))
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


def file_lines(content: list[Any]) -> list[str]:
    """A ``files`` chunk's content as the lines the renderers show."""
    from lmc.workspace.changes import changes_from_content, describe_changes

    return describe_changes(changes_from_content(content))
