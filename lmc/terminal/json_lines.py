"""``--json``: every chunk as one JSON line on stdout, and nothing else, for other programs."""

from __future__ import annotations

import json
from typing import TextIO

from lmc.messages import Chunk

__all__ = ["JsonRenderer", "chunk_json"]


def chunk_json(chunk: Chunk) -> str:
    """One chunk as ``lmc run --json`` writes it (and ``lmc serve`` sends it), no newline."""
    return json.dumps(chunk, ensure_ascii=False)


class JsonRenderer:
    """Writes each chunk as a JSON line, flushed at once so a reader sees it live."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def feed(self, chunk: Chunk) -> None:
        self.out.write(chunk_json(chunk) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.flush()
