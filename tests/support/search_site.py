"""A small website and a SearXNG-shaped search API on one loopback port, for browser tests.

``GET /search?q=QUERY&format=json`` answers as SearXNG does (searx/webutils.py
``get_json_response`` in searxng/searxng: ``query``, ``results`` with each result's
``url``/``title``/``content``/``engine``/``engines``/``positions``/``score``/``category``/
``template``/``thumbnail``/``img_src``/``priority``/``publishedDate``/``parsed_url``, then
``answers``, ``corrections``, ``infoboxes``, ``suggestions``, ``unresponsive_engines``), and
with ``json_enabled = False`` it answers 403 as an instance whose ``search.formats`` lacks
``json`` does (searx/webapp.py ``search``: ``flask.abort(403)``). The pages are the ones in
tests/fixtures/browser/site, plus a long page, a redirect, a large body and an image.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlparse

from support.loopback import serving_in_thread

SITE = Path(__file__).resolve().parent.parent / "fixtures" / "browser" / "site"

#: A page of 400 numbered paragraphs, far longer than one view.
LONG_PAGE = (
    "<html><head><title>A long page</title></head><body>"
    + "".join(f"<p>Paragraph {n}: the quick brown fox jumps over the dog.</p>" for n in range(400))
    + "</body></html>"
)


@dataclass
class SearchSite:
    """The running site: its base URL, what it was asked, and switches for tests."""

    url: str = ""
    json_enabled: bool = True
    queries: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    user_agents: list[str] = field(default_factory=list)


def _result(site: SearchSite, title: str, path: str, content: str, position: int) -> dict[str, Any]:
    url = site.url + path
    host = urlparse(url).netloc
    return {
        "url": url,
        "title": title,
        "content": content,
        "publishedDate": None,
        "thumbnail": "",
        "engine": "duckduckgo",
        "template": "default.html",
        "parsed_url": ["http", host, path, "", "", ""],
        "img_src": "",
        "priority": "",
        "engines": ["duckduckgo", "brave"],
        "positions": [position],
        "score": 2.0 / position,
        "category": "general",
    }


def _search_answer(site: SearchSite, query: str) -> dict[str, Any]:
    results = [
        _result(
            site,
            "Jupyter kernels explained",
            "/docs/kernels.html",
            "What a kernel is and how it runs code.",
            1,
        ),
        _result(
            site,
            "Messaging protocol",
            "/docs/protocol.html",
            "The five channels between a kernel and its clients.",
            2,
        ),
        _result(site, "A long page", "/long.html", "Paragraphs about a fox.", 3),
    ]
    return {
        "query": query,
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [f"{query} tutorial"],
        "unresponsive_engines": [],
    }


#: An answer to GET: status, body, content type, more headers.
_Answer = tuple[int, bytes, str, dict[str, str]]
_NOT_FOUND: Final[_Answer] = (404, b"<h1>Not Found</h1>", "text/html", {})
#: The pages other than the fixtures under /docs/: path -> (status, body, type, headers).
_PAGES: Final[dict[str, _Answer]] = {
    "/long.html": (200, LONG_PAGE.encode(), "text/html; charset=utf-8", {}),
    "/redirect": (302, b"", "text/html", {"Location": "/docs/protocol.html"}),
    "/big.html": (200, b"<p>" + b"x" * (6 * 1024 * 1024) + b"</p>", "text/html", {}),
    "/image.png": (200, b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png", {}),
}


def _page(path: str) -> _Answer:
    """What GET ``path`` answers (anything but /search)."""
    if path.startswith("/docs/"):
        page = SITE / path.removeprefix("/docs/")
        if page.is_file():
            return (200, page.read_bytes(), "text/html; charset=utf-8", {})
        return _NOT_FOUND
    return _PAGES.get(path, _NOT_FOUND)


def _handler(site: SearchSite) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            site.paths.append(parsed.path)
            site.user_agents.append(self.headers.get("User-Agent", ""))
            if parsed.path == "/search":
                self._search(parse_qs(parsed.query))
                return
            status, body, content_type, headers = _page(parsed.path)
            self._send(status, body, content_type, **headers)

        def _search(self, query: dict[str, list[str]]) -> None:
            q = query.get("q", [""])[0]
            site.queries.append(q)
            if query.get("format", ["html"])[0] != "json" or not site.json_enabled:
                self._send(403, b"<h1>Forbidden</h1>", "text/html")
                return
            body = json.dumps(_search_answer(site, q)).encode()
            self._send(200, body, "application/json")

    return Handler


@contextmanager
def search_site() -> Iterator[SearchSite]:
    """Serve the site on a free loopback port until the block ends."""
    site = SearchSite()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield site
