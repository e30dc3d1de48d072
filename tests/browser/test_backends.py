"""The backends against real HTTP servers on loopback and real folders."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.search_site import SearchSite, search_site

from lmc.browser import make_backend
from lmc.browser.exa import ExaBackend
from lmc.browser.fetch import check_address
from lmc.browser.local_files import LocalFilesBackend
from lmc.browser.searxng import SearxngBackend
from lmc.browser.session import Browser
from lmc.errors import BrowserError, ConfigError


@pytest.fixture
def site() -> Iterator[SearchSite]:
    with search_site() as running:
        yield running


def test_searxng_is_asked_for_json_and_its_results_become_numbered_links(
    site: SearchSite,
) -> None:
    browser = Browser(SearxngBackend(site.url, allow_private=True))
    view = browser.search("jupyter kernels")
    assert site.queries == ["jupyter kernels"]
    host = site.url.removeprefix("http://")
    assert view.startswith("[0] jupyter kernels\n**viewing lines [0 - ")
    assert f"【0†Jupyter kernels explained†{host}】 What a kernel is" in view
    assert f"【2†A long page†{host}】" in view
    opened = browser.open(1)
    assert opened.startswith(f"[1] Messaging protocol ({site.url}/docs/protocol.html)\n")
    assert "L4: Shell, IOPub, stdin, control and heartbeat are the five channels." in opened
    browser.close()


def test_searxng_without_json_names_the_setting_that_fixes_it(site: SearchSite) -> None:
    site.json_enabled = False
    browser = Browser(SearxngBackend(site.url, allow_private=True))
    with pytest.raises(BrowserError) as raised:
        browser.search("anything")
    assert str(raised.value) == (
        f"Error during search for `anything`: the SearXNG instance at {site.url} refuses "
        "JSON (HTTP 403): add `json` to `search.formats` in its settings.yml"
    )
    browser.close()


def test_an_unreachable_searxng_is_one_line() -> None:
    backend = SearxngBackend("http://127.0.0.1:9", allow_private=True, timeout=5)
    with pytest.raises(BrowserError, match=r"^cannot reach the SearXNG instance at"):
        backend.search("x", 5)
    backend.close()


def test_a_long_page_is_shown_one_view_at_a_time_and_scrolls(site: SearchSite) -> None:
    browser = Browser(SearxngBackend(site.url, allow_private=True))
    first = browser.open(f"{site.url}/long.html")
    header, bar = first.splitlines()[:2]
    assert header == f"[0] A long page ({site.url}/long.html)"
    end = int(bar.split(" - ")[1].split("]")[0])
    total = int(bar.rsplit(" of ", 1)[1].rstrip("*"))
    assert 0 < end < total  # far longer than one view
    assert len(first) < 6_000  # a view costs about view_tokens (1,024) tokens
    second = browser.open(loc=end + 1)
    header = f"[1] A long page ({site.url}/long.html)\n**viewing lines [{end + 1} - "
    assert second.startswith(header)
    assert f"\nL{end + 1}: " in second
    assert site.paths.count("/long.html") == 1  # scrolling reads the page already open
    browser.close()


def test_redirects_big_pages_and_images(site: SearchSite) -> None:
    backend = SearxngBackend(site.url, allow_private=True)
    assert backend.open(f"{site.url}/redirect").title == "Messaging protocol"
    with pytest.raises(BrowserError, match="larger than 5 MB"):
        backend.open(f"{site.url}/big.html")
    with pytest.raises(BrowserError, match="cannot show a page of type `image/png`"):
        backend.open(f"{site.url}/image.png")
    with pytest.raises(BrowserError, match="HTTP 404"):
        backend.open(f"{site.url}/docs/missing.html")
    view_source = backend.open(f"view-source:{site.url}/docs/protocol.html")
    assert "<h2>Channels</h2>" in view_source.text
    backend.close()


def test_private_addresses_are_refused_unless_allowed(site: SearchSite) -> None:
    """A page the model opens cannot reach the person's own services by default."""
    guarded = Browser(SearxngBackend(site.url))
    with pytest.raises(BrowserError) as raised:
        guarded.open(f"{site.url}/docs/kernels.html")
    assert "is a private address (127.0.0.1)" in str(raised.value)
    assert "browser.allow_private = true" in str(raised.value)
    assert site.paths == []  # nothing reached the server
    allowed = Browser(SearxngBackend(site.url, allow_private=True))
    assert allowed.open(f"{site.url}/docs/kernels.html").startswith("[0] Jupyter kernels")
    assert site.paths == ["/docs/kernels.html"]
    guarded.close()
    allowed.close()


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]:8080/",
        "http://localhost/",
    ],
)
def test_addresses_a_page_may_not_use(url: str) -> None:
    with pytest.raises(BrowserError):
        check_address(url, allow_private=False)


def test_a_redirect_to_a_private_address_is_refused(
    site: SearchSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard holds at every hop: a page let through cannot bounce the fetch elsewhere.

    The first hop is let through as if it were public (loopback is all a test can serve);
    the redirect's target gets the real check."""
    import lmc.browser.fetch as fetch

    checked: list[str] = []

    def guard(url: str, allow_private: bool) -> None:
        checked.append(url)
        if not url.endswith("/redirect"):
            check_address(url, allow_private)

    monkeypatch.setattr(fetch, "check_address", guard)
    backend = SearxngBackend(site.url)
    with pytest.raises(BrowserError, match="private address"):
        backend.open(f"{site.url}/redirect")
    assert checked == [f"{site.url}/redirect", f"{site.url}/docs/protocol.html"]
    assert site.paths == ["/redirect"]
    backend.close()


def test_local_files_search_ranks_and_open_stays_inside_the_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Kernels\nA kernel runs code. kernel kernel\n")
    (docs / "sub" / "b.txt").write_text("One kernel here.\nNothing else.\n")
    (docs / "c.html").write_text("<html><title>Other</title><p>No match</p></html>")
    (tmp_path / "secret.txt").write_text("kernel secret")
    browser = Browser(LocalFilesBackend(docs))
    view = browser.search("kernel")
    first, second = view.index("a.md"), view.index("sub/b.txt")
    assert first < second  # more occurrences rank first
    assert "secret" not in view and "c.html" not in view
    opened = browser.open(1)
    assert "L" in opened and "One kernel here." in opened
    with pytest.raises(BrowserError, match="Error fetching URL"):
        browser.open(f"file://{tmp_path / 'secret.txt'}")


def test_local_files_refuse_paths_outside_the_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "secret.txt").write_text("kernel secret")
    backend = LocalFilesBackend(docs)
    for url in (
        f"file://{tmp_path / 'secret.txt'}",
        "file:///etc/passwd",
        "../secret.txt",
        "https://example.org/",
    ):
        with pytest.raises(BrowserError):
            backend.open(url)


def test_make_backend_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXA_API_KEY", raising=False)
    cases: list[tuple[tuple[str, str | None], str]] = [
        (("searxng", None), "--browser searxng needs --browser-url"),
        (("searxng", "127.0.0.1:8888"), "--browser-url must be an http(s) URL"),
        (("local", str(tmp_path / "none")), "is not one"),
        (("exa", None), "--browser exa needs an API key in EXA_API_KEY"),
        (("bing", None), "--browser must be one of searxng, exa, local, not 'bing'"),
    ]
    for (name, url), message in cases:
        with pytest.raises(ConfigError) as raised:
            make_backend(name, url)
        assert message in str(raised.value)
        assert "\n" not in str(raised.value)


class _ExaHandler(BaseHTTPRequestHandler):
    """Exa's API as OpenAI's reference browser calls it (gpt_oss/tools/simple_browser/
    backend.py ``ExaBackend``); the answer fields are those of Exa's search reference
    (``requestId``, ``resolvedSearchType``, ``results`` with ``id``, ``title``, ``url``,
    ``publishedDate``, ``author``, ``score``, ``text``, ``summary``)."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "key": self.headers.get("x-api-key"), "body": body})
        answer: dict[str, object]
        if self.headers.get("x-api-key") != "k-123":
            answer, status = {"error": "Invalid API key"}, 401
        elif self.path == "/search":
            answer, status = (
                {
                    "requestId": "b5947044c4b78efa9552a7c89b306d95",
                    "resolvedSearchType": "neural",
                    "results": [
                        {
                            "id": "https://example.org/kernels",
                            "title": "Kernels",
                            "url": "https://example.org/kernels",
                            "publishedDate": "2024-01-01T00:00:00.000Z",
                            "author": "Jo",
                            "score": 0.38,
                            "text": "A kernel runs code.",
                            "summary": "About kernels.",
                        }
                    ],
                },
                200,
            )
        else:
            answer, status = (
                {
                    "requestId": "c0ffee",
                    "results": [
                        {
                            "id": body["urls"][0],
                            "url": body["urls"][0],
                            "title": "Kernels",
                            "text": "<p>A <b>kernel</b> runs code.</p>",
                        }
                    ],
                },
                200,
            )
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_exa_sends_the_key_and_the_reference_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ExaHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        monkeypatch.setenv("EXA_API_KEY", "k-123")
        browser = Browser(ExaBackend(url))
        view = browser.search("kernels")
        assert "【0†Kernels†example.org】 About kernels." in view
        page = browser.open(0)
        assert page.startswith("[1] Kernels (https://example.org/kernels)\n")
        assert "A kernel runs code." in page
        search, contents = _ExaHandler.seen[-2:]
        assert search["path"] == "/search" and search["key"] == "k-123"
        assert search["body"] == {
            "query": "kernels",
            "numResults": 20,
            "contents": {"text": True, "summary": True},
        }
        assert contents["body"] == {
            "urls": ["https://example.org/kernels"],
            "text": {"includeHtmlTags": True},
        }
        browser.close()
        monkeypatch.setenv("EXA_API_KEY", "wrong")
        refused = ExaBackend(url)
        refusal = r"^Exa refused the key in EXA_API_KEY \(HTTP 401\)$"
        with pytest.raises(BrowserError, match=refusal):
            refused.search("kernels", 5)
        refused.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
