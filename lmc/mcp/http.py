"""Streamable HTTP to a server: its headers, and OAuth where its table asks for it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from lmc.mcp.config import McpServerConfig

__all__ = ["http_transport"]

#: As the SDK's own client: 30 s to connect or write, 300 s to read (a stream may stay open).
_CONNECT = 30.0
_READ = 300.0


@contextlib.asynccontextmanager
async def http_transport(config: McpServerConfig) -> AsyncIterator[Any]:
    """The transport's streams for ``config.url``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    auth: Any = None
    if config.oauth:
        from lmc.mcp.oauth import oauth_provider

        auth = oauth_provider(config)
    async with (
        httpx2.AsyncClient(
            headers=dict(config.headers) or None,
            timeout=httpx2.Timeout(_CONNECT, read=_READ),
            auth=auth,
        ) as client,
        streamable_http_client(str(config.url), http_client=client) as streams,
    ):
        yield streams
