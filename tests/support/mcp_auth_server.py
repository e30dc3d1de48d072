"""An MCP server that requires a bearer token (the SDK's resource-server auth), for the tests.

``python mcp_auth_server.py PORT`` serves streamable HTTP on 127.0.0.1:PORT; the token
``good-token`` is accepted, anything else is answered 401 with the SDK's WWW-Authenticate
header naming its protected-resource metadata, as real OAuth-protected MCP servers do.
"""

from __future__ import annotations

import sys

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        if token != "good-token":
            return None
        return AccessToken(token=token, client_id="lmc-test", scopes=[])


def main(port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "guarded",
        token_verifier=Verifier(),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(f"{url}/issuer"), resource_server_url=AnyHttpUrl(f"{url}/mcp")
        ),
    )

    @server.tool(description="Say who may pass.")
    def whoami() -> str:
        return "a bearer of good-token"

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main(int(sys.argv[1]))
