"""Helpers for the computer tests: run code on a real Computer and read the chunk stream."""

from __future__ import annotations

from lmc.computer import Computer
from lmc.messages import Chunk, text_of, validate_chunk


def collect(
    computer: Computer, language: str, code: str, timeout: float | None = None
) -> list[Chunk]:
    """Run code and return its chunks, checking the stream's frame on the way."""
    chunks = [validate_chunk(chunk) for chunk in computer.run(language, code, timeout)]
    assert chunks[0] == {"role": "computer", "type": "console", "start": True}
    assert chunks[-2] == {
        "role": "computer",
        "type": "console",
        "format": "active_line",
        "content": None,
    }
    assert chunks[-1] == {"role": "computer", "type": "console", "end": True}
    for chunk in chunks[1:-2]:
        assert chunk.get("content") is not None, chunk
    return chunks


def output_of(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output")


def active_lines(chunks: list[Chunk]) -> list[int]:
    return [int(text_of(c)) for c in chunks[:-2] if c.get("format") == "active_line"]
