"""LMC computer chunks, and the Jupyter IOPub messages they are made from.

:class:`MessageTranslator` is the one ``msg_type`` dispatcher (as in nbclient's
``process_message``): one translator per run, because stream text is cleaned statefully
(an escape sequence may straddle two messages) and repeated active lines are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from lmc.computer.output import TextCleaner, clean_text
from lmc.messages import Chunk, CodeChunk, ImageChunk, ImageFormat, console_end, console_start
from lmc.messages import active_line as active_line_chunk
from lmc.messages import console_output as output_chunk

__all__ = [
    "MessageTranslator",
    "active_line_chunk",
    "console_end",
    "console_start",
    "html_chunk",
    "image_chunk",
    "output_chunk",
]

STDIN_HINT = (
    "lmc: this code asked for keyboard input, which lmc cannot give it; "
    "put the values in the code instead.\n"
)


_DEFAULT_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>\Z")

EMPTY_INPUT_HINT = (
    "lmc: this code asked for keyboard input, which lmc cannot give it, so it got an empty "
    "line; put the values in the code instead.\n"
)


def image_chunk(image_format: ImageFormat, data: str) -> ImageChunk:
    return {"role": "computer", "type": "image", "format": image_format, "content": data}


def html_chunk(html: str) -> CodeChunk:
    return {"role": "computer", "type": "code", "format": "html", "content": html}


class MessageTranslator:
    """Turns one run's IOPub messages into LMC chunks."""

    def __init__(self) -> None:
        self._cleaners: dict[str, TextCleaner] = {}
        self._last_line: int | None = None
        #: Whether the run raised (an ``error`` message came): ``lmc mcp serve``'s isError.
        self.failed = False
        self._handlers: dict[str, Callable[[dict[str, Any]], Iterator[Chunk]]] = {
            "stream": self._stream,
            "display_data": self._rich,
            "update_display_data": self._rich,
            "execute_result": self._rich,
            "error": self._error,
            "lmc_active_line": self._active_line,
            "input_request": self._input_request,
        }

    def chunks(self, message: dict[str, Any]) -> Iterator[Chunk]:
        """The chunks one message stands for (none for status, clear_output and the like)."""
        handler = self._handlers.get(message["header"]["msg_type"])
        if handler is not None:
            yield from handler(message["content"])

    def flush(self) -> Iterator[Chunk]:
        """Whatever stream text is still held back at the end of the run."""
        for cleaner in self._cleaners.values():
            text = cleaner.flush()
            if text:
                yield output_chunk(text)

    def _stream(self, content: dict[str, Any]) -> Iterator[Chunk]:
        cleaner = self._cleaners.setdefault(str(content.get("name")), TextCleaner())
        text = cleaner.feed(str(content.get("text", "")))
        if text:
            yield output_chunk(text)

    def _rich(self, content: dict[str, Any]) -> Iterator[Chunk]:
        """An image if there is one; else the plain text, or the HTML when the text is empty
        or only an object's default repr (``display(HTML(...))``)."""
        data: dict[str, Any] = content.get("data") or {}
        images: tuple[tuple[str, ImageFormat], ...] = (
            ("image/png", "base64.png"),
            ("image/jpeg", "base64.jpeg"),
        )
        for mime, image_format in images:
            if isinstance(data.get(mime), str):
                yield image_chunk(image_format, "".join(data[mime].split()))
                return
        html, text = data.get("text/html"), data.get("text/plain")
        if not isinstance(text, str):
            text = ""
        if isinstance(html, str) and (not text or _DEFAULT_REPR.match(text)):
            yield html_chunk(html)
        elif text:
            # A value is displayed as a line of its own, as the seed shows ("1.4166...\n").
            text = clean_text(text)
            yield output_chunk(text if text.endswith("\n") else text + "\n")

    def _error(self, content: dict[str, Any]) -> Iterator[Chunk]:
        self.failed = True
        traceback = content.get("traceback") or []
        if traceback:
            text = clean_text("\n".join(str(line) for line in traceback)).strip("\n")
        else:
            text = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        yield output_chunk(text + "\n")
        if content.get("ename") == "StdinNotImplementedError":
            yield output_chunk(STDIN_HINT)

    def _input_request(self, content: dict[str, Any]) -> Iterator[Chunk]:
        prompt = clean_text(str(content.get("prompt", "")))
        yield output_chunk(f"{prompt}\n{EMPTY_INPUT_HINT}")

    def _active_line(self, content: dict[str, Any]) -> Iterator[Chunk]:
        line = content.get("line")
        if isinstance(line, int) and not isinstance(line, bool) and line != self._last_line:
            self._last_line = line
            yield active_line_chunk(line)
