"""Where the browser searches and how it opens pages: one small class per service.

Every backend answers ``search`` with a page of results (the reference's "Search Results"
list, whose links the model opens by number) and ``open`` with a page; what it cannot do is a
:class:`lmc.errors.BrowserError` whose text the model is told. ``searxng`` queries a
self-hosted SearXNG (``GET {url}/search?q=QUERY&format=json``), ``exa`` Exa's hosted API
with ``EXA_API_KEY``, ``local`` a folder of documents on a machine without a network.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Protocol

from lmc.browser.page import Page, page_from_html

__all__ = ["BACKENDS", "SearchBackend", "results_page"]

#: The names ``--browser`` takes.
BACKENDS = ("searxng", "exa", "local")


class SearchBackend(Protocol):
    """A search service and a way to open what it finds."""

    #: What the model is told results come from (the system message keeps ``web``).
    name: str

    def search(self, query: str, count: int) -> Page: ...

    def open(self, url: str) -> Page: ...

    def close(self) -> None: ...


def results_page(query: str, results: Iterable[tuple[str, str, str]]) -> Page:
    """The reference's search results: a list of ``title`` links, each followed by its
    summary, made into a page whose links are numbered from 0."""
    items = "".join(
        f"<li><a href='{html.escape(url, quote=True)}'>{html.escape(title)}</a> "
        f"{html.escape(summary)}</li>"
        for title, url, summary in results
    )
    document = f"\n<html><body>\n<h1>Search Results</h1>\n<ul>\n{items}\n</ul>\n</body></html>\n"
    return page_from_html(document, url="", title=query)
