"""``--json``: every chunk as one JSON line on stdout, and nothing else, for other programs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TextIO

from lmc.messages import Chunk, flag_of
from lmc.messages.sanitize import for_json

__all__ = ["JsonRenderer", "chunk_json"]


def chunk_json(chunk: Mapping[str, object]) -> str:
    """One chunk as ``lmc run --json`` writes it (and ``lmc serve`` sends it, with its own
    frames), no newline. C0 is escaped by JSON, C1 and bidi characters by :func:`for_json`,
    so a terminal showing the stream is never driven by it."""
    return for_json(json.dumps(chunk, ensure_ascii=False))


class JsonRenderer:
    """Writes each chunk as a JSON line, flushed at once so a reader sees it live.

    A reader parses the stream into messages by their ``start`` and ``end`` chunks, so when a
    turn is interrupted mid-message (Ctrl-C, SIGTERM) the open message still gets its ``end``.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._open: Chunk | None = None  # the start chunk of the message not yet ended

    def feed(self, chunk: Chunk) -> None:
        self.out.write(chunk_json(chunk) + "\n")
        self.out.flush()
        if chunk.get("start"):
            self._open = chunk
        elif chunk.get("end"):
            self._open = None

    def interrupted(self, note: str = "interrupted") -> None:
        """End the message the interruption cut (``note`` is for people; not written)."""
        opened, self._open = self._open, None
        if opened is not None:
            self.feed(flag_of(opened, "end"))

    def close(self) -> None:
        self.out.flush()
