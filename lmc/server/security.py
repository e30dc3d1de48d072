"""The token and the origin check, as jupyter_server does them.

A token is printed with the URL at start (or set with ``LMC_SERVER_TOKEN``); every
websocket and every HTTP request but ``/heartbeat`` and the page itself must show it.
Browsers send an ``Origin`` header: a request whose origin is not this server's own
(``Host``) is refused, so another web page cannot drive the server through the visitor's
browser.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["is_loopback", "new_token", "origin_allowed", "token_from_headers", "token_matches"]


def new_token() -> str:
    return secrets.token_hex(24)


def token_matches(given: object, token: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token.encode())


def token_from_headers(headers: Mapping[str, str]) -> str | None:
    """``X-API-KEY: TOKEN`` or ``Authorization: Bearer TOKEN``."""
    key = headers.get("x-api-key")
    if key:
        return key
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def origin_allowed(headers: Mapping[str, str]) -> bool:
    """No Origin (not a browser, or same-origin GET), or an Origin naming this very host."""
    origin = headers.get("origin")
    if origin is None:
        return True
    host = headers.get("host", "")
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == host.lower()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
