"""SearXNG, a self-hosted metasearch engine, through its JSON API.

``GET {url}/search?q=QUERY&format=json`` answers ``{"query", "results": [{"url", "title",
"content", ...}], "answers", "corrections", "infoboxes", "suggestions",
"unresponsive_engines"}`` (searx/webutils.py ``get_json_response``). An instance whose
``search.formats`` lacks ``json`` answers 403 (searx/webapp.py ``search``): that is the most
common set-up mistake, so it is named with its fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lmc.browser.backends import results_page
from lmc.browser.fetch import fetch_page
from lmc.browser.page import Page
from lmc.errors import BrowserError

if TYPE_CHECKING:
    import httpx

__all__ = ["SearxngBackend"]


class SearxngBackend:
    """Search on a SearXNG instance; pages are fetched by lmc itself."""

    name = "searxng"

    def __init__(self, url: str, *, allow_private: bool = False, timeout: float = 20.0) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.allow_private = allow_private
        self._client: httpx.Client = httpx.Client(timeout=timeout, follow_redirects=False)

    def _results(self, query: str) -> list[Any]:
        import httpx

        where = f"the SearXNG instance at {self.url}"
        try:
            response = self._client.get(f"{self.url}/search", params={"q": query, "format": "json"})
        except httpx.HTTPError as exc:
            raise BrowserError(f"cannot reach {where} ({exc or type(exc).__name__})") from None
        if response.status_code == 403:
            raise BrowserError(
                f"{where} refuses JSON (HTTP 403): add `json` to `search.formats` in its "
                "settings.yml"
            )
        if response.status_code != 200:
            raise BrowserError(f"{where} answered HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise BrowserError(f"{where} did not answer JSON") from None
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise BrowserError(f"{where} answered JSON without a `results` list")
        return results

    def search(self, query: str, count: int) -> Page:
        found = []
        for result in self._results(query):
            if not isinstance(result, dict) or not isinstance(result.get("url"), str):
                continue
            title = str(result.get("title") or result["url"])
            found.append((title, result["url"], str(result.get("content") or "")))
            if len(found) == count:
                break
        return results_page(query, found)

    def open(self, url: str) -> Page:
        return fetch_page(self._client, url, self.allow_private)

    def close(self) -> None:
        self._client.close()
