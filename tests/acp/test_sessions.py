"""ACP's mcpServers as lmc's server tables."""

from __future__ import annotations

import pytest

from lmc.acp.sessions import mcp_tables
from lmc.acp.wire import RpcError
from lmc.mcp.config import parse_server


def test_stdio_and_http_servers_become_tables_lmc_parses() -> None:
    tables = mcp_tables(
        [
            {
                "name": "My Files",
                "command": "/bin/fs",
                "args": ["-v"],
                "env": [{"name": "A", "value": "1"}],
            },
            {"type": "http", "name": "web", "url": "https://x.test/mcp", "headers": []},
            {"name": "web", "command": "/bin/other", "args": [], "env": []},
        ],
        configured={"fs": {}},
    )
    assert list(tables) == ["My-Files", "web", "web-2"]
    assert tables["My-Files"] == {"command": "/bin/fs", "args": ["-v"], "env": {"A": "1"}}
    for name, table in tables.items():
        parse_server(name, table)


@pytest.mark.parametrize(
    "servers",
    ["x", [{"type": "sse", "name": "s", "url": "https://x.test", "headers": []}], [{"args": [1]}]],
)
def test_what_lmc_cannot_start_is_invalid_params(servers: object) -> None:
    with pytest.raises(RpcError) as refused:
        mcp_tables(servers, {})
    assert refused.value.code == -32602
