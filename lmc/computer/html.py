"""HTML is not executed: it is handed to whoever shows the stream, as an HTML chunk.

The terminal saves it with the run's other outputs (images) in lmc's data directory and,
with a person at the terminal, opens it in their browser; a ``--json`` or API consumer gets
the chunk and decides. The computer writes no file of its own, so none is left behind.

The person's browser has the network even when the sandbox's code has not: a page could
send a secret away by loading an image URL. So while the sandbox's network is off, the
document starts (after its doctype) with a Content-Security-Policy that lists no network
source: scripts, styles, images and fonts inline or as data:/blob: URLs still work, nothing
is fetched. A policy in the page itself can only narrow it further (browsers enforce every
policy). Navigation (a link, a redirect) is not something CSP governs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from lmc.computer.chunks import html_chunk
from lmc.messages import Chunk

__all__ = ["OFFLINE_CSP", "run_html", "without_network"]

#: No network source in any directive; inline and data:/blob: content still works.
OFFLINE_CSP: Final = (
    "default-src 'none'; "
    "script-src 'unsafe-inline' 'unsafe-eval' data: blob:; "
    "style-src 'unsafe-inline' data: blob:; "
    "img-src data: blob:; media-src data: blob:; font-src data: blob:; "
    "connect-src 'none'; frame-src data: blob:; worker-src blob:; "
    "form-action 'none'; base-uri 'none'"
)
_META: Final = f'<meta http-equiv="Content-Security-Policy" content="{OFFLINE_CSP}">'
_DOCTYPE = re.compile(r"\A(?:\ufeff)?\s*(?:<!doctype[^>]*>)?", re.IGNORECASE)


def without_network(document: str) -> str:
    """``document`` with the offline policy before any of its content."""
    start = _DOCTYPE.match(document)
    cut = start.end() if start is not None else 0
    return document[:cut] + _META + document[cut:]


def run_html(code: str, *, network: bool = True) -> Iterator[Chunk]:
    """The document as one HTML chunk (the model is told it was shown); without the
    network, under a policy that fetches nothing."""
    yield html_chunk(code if network else without_network(code))
