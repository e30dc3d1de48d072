"""An MCP server that is its own OAuth authorization server (the SDK's auth routes), for tests.

``python mcp_oauth_server.py PORT [EXPIRES_IN]`` serves streamable HTTP on 127.0.0.1:PORT with
dynamic client registration, an authorization endpoint that consents at once (the test's
"browser" only follows the redirect), authorization codes with PKCE checked by the SDK, and
refresh tokens. Access tokens from a sign-in live ``EXPIRES_IN`` seconds (default 3600), those
from a refresh an hour; each use of a refresh token is counted by the ``refreshes`` tool.
Modelled on the SDK's own in-memory provider (python-sdk examples/stories/_shared/auth.py).
"""

from __future__ import annotations

import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self, expires_in: int) -> None:
        self.expires_in = expires_in
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.refreshes = 0

    def _tokens(
        self, client_id: str, scopes: list[str], resource: str | None, lifetime: int
    ) -> OAuthToken:
        access, refresh = f"access_{secrets.token_hex(8)}", f"refresh_{secrets.token_hex(8)}"
        expires = int(time.time()) + lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=f"code_{secrets.token_hex(8)}",
            client_id=client.client_id,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        code = authorization_code
        return self._tokens(code.client_id, code.scopes, code.resource, self.expires_in)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refreshes += 1
        del self.refresh[refresh_token.token]
        old = refresh_token
        return self._tokens(old.client_id, scopes or old.scopes, old.resource, 3600)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main(port: int, expires_in: int) -> None:
    url = f"http://127.0.0.1:{port}"
    provider = Provider(expires_in)
    server = MCPServer(
        "signed",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(url),
            resource_server_url=AnyHttpUrl(f"{url}/mcp"),
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool(description="How many times a refresh token was used.")
    def refreshes() -> str:
        return str(provider.refreshes)

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3600)
