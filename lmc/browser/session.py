"""The browser's state for one conversation: a stack of pages, each view a numbered cursor.

``search``, ``open`` and ``find`` behave as OpenAI's reference ``SimpleBrowserTool`` does,
so the model meets the tool it was trained with: every call pushes a page and shows a view of
it under the next cursor; ``open`` follows a link by number (on the page of ``cursor``, the
latest by default), opens a URL, or scrolls with ``loc``/``num_lines``; ``find`` lists the
lines holding a pattern as a page of its own. A view ends where the reference's
``view_tokens`` limit falls (:mod:`lmc.browser.paging`), so a long page costs the context one
screen at a time. Mistakes (a bad cursor, a link id that is
not on the page) and failures of the backend come back as text for the model, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from lmc.browser.backends import SearchBackend
from lmc.browser.fetch import VIEW_SOURCE
from lmc.browser.page import Page, find_in_page, join_lines, render_view, wrap_lines
from lmc.browser.paging import TokenLengths, view_end
from lmc.errors import BrowserError

__all__ = ["Browser", "BrowserUsageError", "estimate_tokens"]

#: Tokens shown in one view when ``num_lines`` is not given (the reference's ``view_tokens``).
VIEW_TOKENS: Final = 1024
#: Results asked of the backend per search (the reference's ``max_search_results``).
SEARCH_RESULTS: Final = 20
_URL_IN_ERROR: Final = 1024


class BrowserUsageError(Exception):
    """A call the browser cannot carry out as written; ``str()`` is what the model is told."""


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` takes (o200k averages about four characters a token)."""
    return (len(text) + 3) // 4


def _cut(text: str) -> str:
    return text if len(text) <= _URL_IN_ERROR else text[: _URL_IN_ERROR - 3] + "..."


class Browser:
    """One conversation's pages and the calls the model makes on them."""

    def __init__(
        self,
        backend: SearchBackend,
        *,
        view_tokens: int = VIEW_TOKENS,
        count_tokens: Callable[[str], int] = estimate_tokens,
        token_lengths: TokenLengths | None = None,
    ) -> None:
        self.backend = backend
        self.view_tokens = view_tokens
        self.count_tokens = count_tokens
        #: Each token's decoded length, when the tokenizer tells: the reference's own measure.
        self.token_lengths = token_lengths
        self.stack: list[Page] = []
        self._by_url: dict[str, Page] = {}

    # -- the pages ---------------------------------------------------------------------------

    @property
    def cursor(self) -> int:
        return len(self.stack) - 1

    def url_of(self, cursor: int) -> str | None:
        """The URL behind a cursor (for turning citations into links)."""
        return self.stack[cursor].url if 0 <= cursor < len(self.stack) else None

    def _push(self, page: Page) -> None:
        if page.url:
            self._by_url[page.url] = page
        self.stack.append(page)

    def _page(self, cursor: int = -1) -> Page:
        if not self.stack:
            raise BrowserUsageError("No pages to access!")
        if cursor in (-1, self.cursor):
            return self.stack[-1]
        try:
            return self.stack[cursor]
        except IndexError:
            raise BrowserUsageError(
                f"Cursor `{cursor}` is out of range. Available cursor indices: [0 - {self.cursor}]."
            ) from None

    def _show(self, loc: int = 0, num_lines: int = -1) -> str:
        """A view of the latest page; a view that cannot be shown takes its page back off."""
        page = self.stack[-1]
        lines = wrap_lines(page.text)
        if loc >= len(lines):
            self.stack.pop()
            raise BrowserUsageError(
                f"Invalid location parameter: `{loc}`. "
                f"Cannot exceed page maximum of {len(lines) - 1}."
            )
        end = view_end(
            lines,
            loc,
            num_lines,
            self.view_tokens,
            count_tokens=self.count_tokens,
            token_lengths=self.token_lengths,
        )
        body = join_lines(lines[loc:end], numbered=True, offset=loc)
        return render_view(page, self.cursor, first=loc, end=end, total=len(lines), body=body)

    # -- the model's calls -------------------------------------------------------------------

    def search(self, query: str, topn: int = 10, source: str | None = None) -> str:
        """Search and show the results page (``topn``/``source`` are accepted and, as in the
        reference, the backend's own number of results is used)."""
        del topn, source
        try:
            page = self.backend.search(query, SEARCH_RESULTS)
        except BrowserError as exc:
            raise BrowserError(f"Error during search for `{query}`: {_cut(str(exc))}") from None
        self._push(page)
        return self._show(0)

    def _open_url(self, url: str, refresh: bool) -> Page:
        cached = None if refresh else self._by_url.get(url)
        if cached is not None:
            return cached
        try:
            return self.backend.open(url)
        except BrowserError as exc:
            raise BrowserError(f"Error fetching URL `{_cut(url)}`: {_cut(str(exc))}") from None

    def open(
        self,
        id: int | str = -1,
        *,
        cursor: int = -1,
        loc: int = -1,
        num_lines: int = -1,
        view_source: bool = False,
        source: str | None = None,
    ) -> str:
        """Follow link ``id`` of page ``cursor``, open the URL ``id``, or scroll."""
        del source
        start: int | None = None
        if isinstance(id, str):
            url, refresh, page = id, True, None
        else:
            current = self._page(cursor)
            refresh = False
            if id >= 0:
                url = current.urls.get(str(id), "")
                if not url:
                    raise BrowserUsageError(f"Invalid link id `{id}`.")
                snippet = (current.snippets or {}).get(str(id))
                if snippet is not None and snippet.line_idx is not None:
                    start = snippet.line_idx - 4 if snippet.line_idx > 4 else snippet.line_idx
                page = None
            else:
                url, page = current.url, (None if view_source else current)
        if view_source:
            url = VIEW_SOURCE + url
        self._push(page if page is not None else self._open_url(url, refresh))
        if loc < 0:
            loc = start if start is not None else 0
        return self._show(loc, num_lines)

    def find(self, pattern: str, cursor: int = -1) -> str:
        """Lines of page ``cursor`` (the latest by default) that hold ``pattern``."""
        page = self._page(cursor)
        if page.snippets is not None:
            raise BrowserUsageError("Cannot run `find` on search results page or find results page")
        self._push(find_in_page(str(pattern), page))
        return self._show(0)

    def close(self) -> None:
        self.backend.close()
