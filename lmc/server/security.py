"""The token, the Host and Origin checks, the auth throttle and a log filter for the token.

A token is printed with the URL at start (or set with ``LMC_SERVER_TOKEN``); every
websocket and every HTTP request but ``/heartbeat`` and the page itself must show it.

Two browser attacks are refused before any of that:

- another web page driving the server through the visitor's browser: browsers send an
  ``Origin`` header, and a request whose origin is not this server's own is refused;
- DNS rebinding: a page on ``evil.example`` whose name is made to resolve to 127.0.0.1 is
  same-origin with the server as far as the browser knows, so its ``Origin`` and ``Host``
  agree. Its ``Host`` header still names ``evil.example``: only loopback names, IP
  addresses, the name the server was bound to and names the person allowed are served
  (a rebinding needs a name; an IP address cannot be rebound).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

__all__ = [
    "AuthThrottle",
    "TokenRedactor",
    "allowed_hosts",
    "host_allowed",
    "is_loopback",
    "keep_out_of_logs",
    "new_token",
    "origin_allowed",
    "token_from_headers",
    "token_matches",
]

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def new_token() -> str:
    return secrets.token_hex(24)


def token_matches(given: object, token: str) -> bool:
    if not isinstance(given, str):
        return False
    try:
        encoded = given.encode()
    except UnicodeEncodeError:  # a lone surrogate such as "\ud800": not the token
        return False
    return hmac.compare_digest(encoded, token.encode())


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
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str | None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names served: loopback names, the bound name (unless a wildcard) and
    ``extra`` (``*.example.org`` allows the subdomains)."""
    names = set(LOOPBACK_NAMES)
    if bound and bound.strip("[]") not in ("0.0.0.0", "::", ""):
        names.add(bound.strip("[]").lower())
    names.update(name.strip().lower() for name in extra if name.strip())
    return frozenset(names)


_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::\d{1,5})?$")


def host_allowed(host_header: str | None, allowed: frozenset[str]) -> bool:
    """Whether the ``Host`` header names this server (see the module docstring)."""
    if not host_header:
        return False
    match = _HOST.match(host_header.strip())
    if match is None:
        return False
    host = match.group(1).lower()
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return True  # an address: nothing to rebind
    if host in allowed:
        return True
    return any(
        name.startswith("*.") and host.endswith(name[1:]) and len(host) > len(name) - 1
        for name in allowed
    )


class AuthThrottle:
    """Delays the answer to a wrong token, per client address: nothing for the first
    ``free`` failures, then ``base`` seconds doubling up to ``ceiling``. Failures are
    forgotten ``window`` seconds after the last one. A right token is never delayed, and no
    connection is refused: a guesser only waits."""

    def __init__(
        self,
        *,
        free: int = 3,
        base: float = 0.25,
        ceiling: float = 3.0,
        window: float = 300.0,
        max_clients: int = 4096,
    ) -> None:
        self.free = free
        self.base = base
        self.ceiling = ceiling
        self.window = window
        self.max_clients = max_clients
        self._failures: dict[str, tuple[int, float]] = {}

    def failed(self, client: str) -> float:
        """Count a wrong token from ``client``; the seconds to wait before answering."""
        now = time.monotonic()
        count, last = self._failures.get(client, (0, now))
        if now - last > self.window:
            count = 0
        count += 1
        if client not in self._failures and len(self._failures) >= self.max_clients:
            self._failures.pop(next(iter(self._failures)))  # the oldest entry goes
        self._failures[client] = (count, now)
        if count <= self.free:
            return 0.0
        return float(min(self.ceiling, self.base * 2 ** (count - self.free - 1)))

    def failures(self, client: str) -> int:
        return self._failures.get(client, (0, 0.0))[0]


class TokenRedactor(logging.Filter):
    """Replaces the token (and any ``token=`` query value) in log records: the access log
    prints request lines, and the page is opened with ``/?token=...``."""

    _QUERY = re.compile(r"(token=)[^&\s\"']*", re.IGNORECASE)

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self._clean(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = self._clean(record.msg)
        return True

    def _clean(self, text: str) -> str:
        if self.token:
            text = text.replace(self.token, "[token]")
        return self._QUERY.sub(r"\1[token]", text)


def keep_out_of_logs(token: str) -> Callable[[], None]:
    """Redact ``token`` in every record uvicorn's and the root logger's handlers write (the
    access log prints request lines, the page is opened with ``/?token=``); call after
    uvicorn configured its logging. Returns the undo."""
    redactor = TokenRedactor(token)
    names = ("", "uvicorn", "uvicorn.access", "uvicorn.error", "uvicorn.asgi")
    handlers = {h for name in names for h in logging.getLogger(name).handlers}
    for handler in handlers:
        handler.addFilter(redactor)

    def undo() -> None:
        for handler in handlers:
            handler.removeFilter(redactor)

    return undo
