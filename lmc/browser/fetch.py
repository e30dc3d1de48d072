"""Fetching a page for the browser: lmc's own HTTP client, outside the code sandbox.

The model chooses the URL, so a page it opens could point at the person's own services
(a router's admin page, a cloud metadata endpoint at 169.254.169.254, a dev server on
loopback). Those addresses are refused unless the configuration allows private addresses;
every redirect is checked the same way. Bodies are read up to a size cap, with timeouts, so
a hostile server can neither hang a turn nor fill the memory.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin, urlparse

from lmc.browser.page import Page, page_from_html, page_from_text
from lmc.errors import BrowserError

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_PAGE_BYTES", "VIEW_SOURCE", "check_address", "fetch_page"]

VIEW_SOURCE: Final = "view-source:"
MAX_PAGE_BYTES: Final = 5 * 1024 * 1024
_MAX_REDIRECTS: Final = 5
_USER_AGENT: Final = "lmc-browser/1"


def check_address(url: str, allow_private: bool) -> None:
    """Refuse what is not http(s), and private, loopback or link-local hosts unless allowed."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BrowserError(f"only http and https pages can be opened, not `{url}`")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parsed.hostname, parsed.port or 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise BrowserError(f"cannot resolve `{parsed.hostname}` ({exc})") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global:
            raise BrowserError(
                f"`{parsed.hostname}` is a private address ({address}); lmc's browser opens "
                "only public sites unless browser.allow_private = true"
            )


def _read(response: httpx.Response) -> bytes:
    body = bytearray()
    for part in response.iter_bytes():
        body += part
        if len(body) > MAX_PAGE_BYTES:
            raise BrowserError(f"the page is larger than {MAX_PAGE_BYTES // (1024 * 1024)} MB")
    return bytes(body)


def fetch_page(client: httpx.Client, url: str, allow_private: bool) -> Page:
    """GET ``url`` (following checked redirects) and make a page of it."""
    import httpx

    view_source = url.startswith(VIEW_SOURCE)
    target = url.removeprefix(VIEW_SOURCE)
    for _ in range(_MAX_REDIRECTS + 1):
        check_address(target, allow_private)
        try:
            with client.stream("GET", target, headers={"User-Agent": _USER_AGENT}) as response:
                if response.is_redirect and "location" in response.headers:
                    target = urljoin(target, response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise BrowserError(f"HTTP {response.status_code}")
                body = _read(response)
                content_type = response.headers.get("content-type", "")
                encoding = response.encoding or "utf-8"
        except httpx.HTTPError as exc:
            raise BrowserError(str(exc) or type(exc).__name__) from None
        text = body.decode(encoding, errors="replace")
        if view_source:
            return page_from_text(text, url)
        if "html" in content_type or (not content_type and "<html" in text[:1000].lower()):
            return page_from_html(text, target)
        if content_type.startswith(("text/", "application/json", "application/xml")):
            return page_from_text(text, target)
        raise BrowserError(f"cannot show a page of type `{content_type}`")
    raise BrowserError(f"more than {_MAX_REDIRECTS} redirects")
