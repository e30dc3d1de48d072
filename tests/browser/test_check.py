"""``lmc doctor``'s browser rows, against the SearXNG-shaped server."""

from __future__ import annotations

from support.search_site import search_site

from lmc.browser.check import browser_lines


def test_off_working_and_refusing() -> None:
    assert browser_lines(None, None, False)[0][:2] == ("browser", True)
    with search_site() as site:
        [(name, good, detail)] = browser_lines("searxng", site.url, False)
        assert (name, good) == ("browser", True)
        assert detail == f"searxng at {site.url} answers (3 results)"
        site.json_enabled = False
        [(_, good, detail)] = browser_lines("searxng", site.url, False)
        assert not good and "add `json` to `search.formats`" in detail
    [(_, good, detail)] = browser_lines("searxng", None, False)
    assert not good and detail.startswith("--browser searxng needs --browser-url")
