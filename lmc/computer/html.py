"""HTML is not executed: it is saved to a file and, with a person watching, shown in a browser."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

from lmc.computer.chunks import output_chunk
from lmc.messages import Chunk

__all__ = ["run_html"]


def run_html(code: str, *, open_browser: bool) -> Iterator[Chunk]:
    """Write ``code`` to a temporary .html file; say where it is (and open it if asked)."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", prefix="lmc-", suffix=".html", delete=False
    ) as handle:
        handle.write(code)
    path = Path(handle.name)
    opened = False
    if open_browser:
        import webbrowser

        opened = webbrowser.open(path.as_uri())
    where = "saved to" if not opened else "saved to and opened in the browser from"
    yield output_chunk(f"The HTML was {where} {path}\n")
