"""HTML is not executed: it is handed to whoever shows the stream, as an HTML chunk.

The terminal saves it with the run's other outputs (images) in lmc's data directory and,
with a person at the terminal, opens it in their browser; a ``--json`` or API consumer gets
the chunk and decides. The computer writes no file of its own, so none is left behind.
"""

from __future__ import annotations

from collections.abc import Iterator

from lmc.computer.chunks import html_chunk
from lmc.messages import Chunk

__all__ = ["run_html"]


def run_html(code: str) -> Iterator[Chunk]:
    """The document as one HTML chunk (the model is told it was shown)."""
    yield html_chunk(code)
