"""Fixtures for the MCP tests: the toy MCP server over streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.mcp_servers import toy_http


@pytest.fixture(scope="module")
def toy_http_url() -> Iterator[str]:
    with toy_http() as url:
        yield url
