"""A plain-text renderer of the LMC chunk stream, for ``chat(display=True)``.

The terminal builds a rich renderer; anything with ``feed(chunk)`` and ``close()`` will do
(:class:`Renderer`). A renderer that also has ``confirm(block)`` is asked before code runs
when ``auto_run`` is off and no ``confirm`` callable was given to ``chat``.

Questions go to the controlling terminal (:func:`open_terminal`, ``/dev/tty``), never to
standard input or output: the chunks may be going to a file, and standard input belongs to the
program (it is never read, so never closed, here). The CLI asks through the same function.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Protocol, TextIO, cast, runtime_checkable

from lmc.agent.approvals import Answer, Declined
from lmc.messages import Block, Chunk
from lmc.messages.sanitize import for_terminal

__all__ = ["PlainRenderer", "Renderer", "is_terminal", "open_terminal", "terminal_stream"]


def open_terminal() -> TextIO | None:
    """The controlling terminal for a question, or None when there is none to ask.

    There is one when a standard stream (input or error) is a terminal and ``/dev/tty``
    opens: under cron, CI or ``setsid`` there is none, whatever standard output is.
    """
    if not any(is_terminal(stream) for stream in (sys.stdin, sys.stderr)):
        return None
    try:
        fd = os.open(os.ctermid(), os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    return terminal_stream(fd)


def terminal_stream(fd: int) -> TextIO:
    """A text stream that reads and writes the terminal ``fd`` (and closes it when closed)."""
    # A terminal cannot seek, so "r+" (a BufferedRandom) is refused: read and write apart.
    pair = io.BufferedRWPair(io.FileIO(fd, "r", closefd=False), io.FileIO(fd, "w"))
    buffer = cast("io.BufferedRandom", pair)  # the reading and writing TextIOWrapper needs
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace", line_buffering=True)


def is_terminal(stream: object) -> bool:
    """``stream.isatty()``, False for a stream without one or a closed one."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # closed
        return False


@runtime_checkable
class Renderer(Protocol):
    """A consumer of LMC chunks that shows them to a person."""

    def feed(self, chunk: Chunk) -> None: ...

    def close(self) -> None: ...


class PlainRenderer:
    """Writes messages, code (fenced) and output as plain text; reasoning only on request."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        show_reasoning: bool = False,
        ask: TextIO | None = None,
    ) -> None:
        self._out = out if out is not None else sys.stdout
        self._ask = ask  # None: the controlling terminal, opened when there is a question
        self._show_reasoning = show_reasoning
        self._last = "\n"  # the last character written

    def _write(self, text: str, *, keep_cr: bool = False) -> None:
        """Write ``text``, sanitized: every chunk's text was written by the model or code."""
        text = for_terminal(text, keep_cr=keep_cr)
        if text:
            self._out.write(text)
            self._out.flush()
            self._last = text[-1]

    def _line_break(self) -> None:
        if self._last != "\n":
            self._write("\n")

    def feed(self, chunk: Chunk) -> None:
        kind = chunk.get("type")
        if kind == "reasoning" and not self._show_reasoning:
            return
        if chunk.get("start"):
            self._line_break()
            if kind in ("code", "tool_call"):
                self._write(f"```{chunk.get('format', '')}\n")
            return
        if chunk.get("end"):
            self._line_break()
            if kind in ("code", "tool_call"):
                self._write("```\n")
            return
        content = chunk.get("content")
        if kind == "image":
            self._line_break()
            where = content if chunk.get("format") == "path" else chunk.get("format")
            self._write(f"[image: {where}]\n")
        elif kind == "code" and chunk.get("role") == "computer":
            self._line_break()
            self._write(f"[{chunk.get('format')} output]\n")
        elif isinstance(content, str) and chunk.get("format") not in ("active_line", "progress"):
            self._write(content, keep_cr=kind == "console")

    def confirm(self, block: Block) -> Answer:
        """Ask on the terminal (y, or n and a reason); without one, nothing runs."""
        terminal = self._ask if self._ask is not None else open_terminal()
        if terminal is None or not is_terminal(terminal):
            self._write("(not run: confirmation is on and there is no terminal to ask)\n")
            return False
        try:
            self._line_break()
            if block["type"] == "tool_call":  # an MCP tool: its arguments, not code
                question = f"Call the tool {for_terminal(block['format'])}?"
            else:
                question = f"Run this {for_terminal(block['format'])} code?"
            terminal.write(f"{question} [y/N, or n and a reason] ")
            terminal.flush()
            answer = terminal.readline().strip()
        finally:
            if terminal is not self._ask:
                terminal.close()
        if answer.lower() in ("y", "yes"):
            return True
        word, _, reason = answer.partition(" ")
        return Declined(reason.strip() if word.lower() in ("n", "no") else "")

    def close(self) -> None:
        self._line_break()
