"""Streamable HTTP to a server: its headers, and OAuth where its table asks for it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from lmc.mcp.config import McpServerConfig

__all__ = ["HttpSeen", "http_transport"]

#: As the SDK's own client: 30 s to connect or write, 300 s to read (a stream may stay open).
_CONNECT = 30.0
_READ = 300.0


@dataclass
class HttpSeen:
    """What the HTTP answers said beyond what the SDK passes on: a 401 and its challenge."""

    unauthorized: bool = False
    challenge: str = ""


@contextlib.asynccontextmanager
async def http_transport(config: McpServerConfig, seen: HttpSeen) -> AsyncIterator[Any]:
    """The transport's streams for ``config.url``; a 401 answer is noted in ``seen``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async def note(response: httpx2.Response) -> None:
        if response.status_code == 401:
            seen.unauthorized = True
            seen.challenge = response.headers.get("www-authenticate", "")

    auth: Any = None
    if config.oauth:
        from lmc.mcp.oauth import oauth_provider

        auth = oauth_provider(config)
    async with (
        httpx2.AsyncClient(
            headers=dict(config.headers) or None,
            timeout=httpx2.Timeout(_CONNECT, read=_READ),
            auth=auth,
            event_hooks={"response": [note]},
        ) as client,
        streamable_http_client(str(config.url), http_client=client) as streams,
    ):
        yield streams
