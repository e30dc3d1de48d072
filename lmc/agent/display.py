"""A plain-text renderer of the LMC chunk stream, for ``chat(display=True)``.

The terminal builds a rich renderer; anything with ``feed(chunk)`` and ``close()`` will do
(:class:`Renderer`). A renderer that also has ``confirm(block)`` is asked before code runs
when ``auto_run`` is off and no ``confirm`` callable was given to ``chat``.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, TextIO, runtime_checkable

from lmc.messages import Chunk

__all__ = ["PlainRenderer", "Renderer"]


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
        self._ask = ask if ask is not None else sys.stdin
        self._show_reasoning = show_reasoning
        self._last = "\n"  # the last character written

    def _write(self, text: str) -> None:
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
            self._write(content)

    def confirm(self, block: dict[str, Any]) -> bool:
        """Ask on the terminal; without one, nothing runs."""
        if not self._ask.isatty():
            self._write("(not run: confirmation is on and there is no terminal to ask)\n")
            return False
        self._line_break()
        if block.get("type") == "tool_call":  # an MCP tool: its arguments, not code
            self._write(f"Call the tool {block.get('format')}? [y/N] ")
        else:
            self._write(f"Run this {block.get('format', 'code')} code? [y/N] ")
        answer = self._ask.readline().strip().lower()
        return answer in ("y", "yes")

    def close(self) -> None:
        self._line_break()
