"""Exa's hosted search API, with the key from ``EXA_API_KEY``.

The requests are the ones OpenAI's reference browser sends (gpt_oss/tools/simple_browser/
backend.py ``ExaBackend``): ``POST /search`` with ``{"query", "numResults", "contents":
{"text": true, "summary": true}}`` answered by ``{"requestId", "results": [{"id", "title",
"url", "summary", "text", ...}]}``, and ``POST /contents`` with ``{"urls": [URL], "text":
{"includeHtmlTags": true}}`` for a page's HTML. The key goes in ``x-api-key``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final

from lmc.browser.backends import results_page
from lmc.browser.fetch import VIEW_SOURCE
from lmc.browser.page import Page, page_from_html, page_from_text
from lmc.errors import BrowserError, ConfigError

if TYPE_CHECKING:
    import httpx

__all__ = ["EXA_URL", "ExaBackend"]

EXA_URL: Final = "https://api.exa.ai"
KEY_VARIABLE: Final = "EXA_API_KEY"


class ExaBackend:
    """Search and page contents from Exa."""

    name = "exa"

    def __init__(self, url: str | None = None, *, timeout: float = 30.0) -> None:
        import httpx

        key = os.environ.get(KEY_VARIABLE, "")
        if not key:
            raise ConfigError(f"--browser exa needs an API key in {KEY_VARIABLE}")
        self.url = (url or EXA_URL).rstrip("/")
        self._client: httpx.Client = httpx.Client(
            timeout=timeout, headers={"x-api-key": key, "User-Agent": "lmc-browser/1"}
        )

    def _post(self, endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            response = self._client.post(f"{self.url}{endpoint}", json=payload)
        except httpx.HTTPError as exc:
            raise BrowserError(f"cannot reach Exa at {self.url} ({exc})") from None
        if response.status_code in (401, 403):
            status = response.status_code
            raise BrowserError(f"Exa refused the key in {KEY_VARIABLE} (HTTP {status})")
        if response.status_code != 200:
            raise BrowserError(f"Exa answered HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise BrowserError("Exa did not answer JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise BrowserError("Exa answered without a `results` list")
        return data

    def search(self, query: str, count: int) -> Page:
        data = self._post(
            "/search",
            {"query": query, "numResults": count, "contents": {"text": True, "summary": True}},
        )
        found = [
            (str(r.get("title") or r["url"]), r["url"], str(r.get("summary") or ""))
            for r in data["results"]
            if isinstance(r, dict) and isinstance(r.get("url"), str)
        ]
        return results_page(query, found)

    def open(self, url: str) -> Page:
        target = url.removeprefix(VIEW_SOURCE)
        data = self._post("/contents", {"urls": [target], "text": {"includeHtmlTags": True}})
        if not data["results"] or not isinstance(data["results"][0], dict):
            raise BrowserError(f"Exa returned no contents for {target}")
        result = data["results"][0]
        text, title = str(result.get("text") or ""), str(result.get("title") or "")
        if url.startswith(VIEW_SOURCE):
            return page_from_text(text, url, title)
        return page_from_html(text, target, title or None)

    def close(self) -> None:
        self._client.close()
