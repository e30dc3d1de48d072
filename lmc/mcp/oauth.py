"""OAuth for HTTP servers (``oauth = true``): the SDK's client auth, tokens kept by lmc.

The SDK's :class:`~mcp.client.auth.OAuthClientProvider` runs the authorization-code flow with
PKCE, registers lmc as a client where the server allows it, and refreshes tokens. lmc gives it
a store (one JSON file per server in lmc's data dir, mode 0600) and the two halves of the
person's part: the authorization URL is printed (and opened in a browser when there is one),
and the redirect comes back to a one-shot HTTP listener on loopback.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlparse

import anyio

from lmc.mcp.config import McpServerConfig
from lmc.messages.sanitize import for_terminal

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["REDIRECT_PORT", "SIGN_IN_WAIT", "TokenFile", "oauth_provider", "token_path"]

#: The loopback port the authorization server redirects to (registered with the client).
REDIRECT_PORT: Final = 33418
#: A stored access token this close to its end is refreshed rather than used.
_EARLY: Final = 30.0
#: How long the person has to sign in.
SIGN_IN_WAIT: Final = 300.0


def token_path(name: str) -> Path:
    from lmc.paths import data_dir

    return data_dir() / "mcp-oauth" / f"{name}.json"


class TokenFile:
    """The SDK's token storage as one JSON file, written 0600 (tokens are secrets)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: object) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file)
        self.path.chmod(0o600)  # an older file may have had other bits

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens. One past its lifetime comes back without its access token: the
        SDK cannot know a stored token's age, and would try it, be refused, and ask the person
        to sign in again; without it, it uses the refresh token."""
        from mcp.shared.auth import OAuthToken

        data = self._read()
        raw = data.get("tokens")
        if not isinstance(raw, dict):
            return None
        tokens = OAuthToken.model_validate(raw)
        saved = data.get("saved_at")
        expired = (
            isinstance(saved, int | float)
            and tokens.expires_in is not None
            and time.time() >= saved + tokens.expires_in - _EARLY
        )
        if expired and tokens.refresh_token:
            return tokens.model_copy(update={"access_token": ""})
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))
        self._write("saved_at", time.time())

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


class _Redirect:
    """The person's part of the sign-in: the URL shown (and opened in a browser where there is
    one), then the one redirect back to the loopback listener, which is bound before the
    browser opens (a quick redirect waits in the listen queue)."""

    def __init__(self) -> None:
        self._listener: Any = None

    async def show(self, url: str) -> None:
        import threading
        import webbrowser

        self._listener = await anyio.create_tcp_listener(
            local_host="127.0.0.1", local_port=REDIRECT_PORT
        )
        # The URL is the server's: no escape sequence of its reaches the terminal.
        sys.stderr.write(f"lmc: sign in to the MCP server in a browser: {for_terminal(url)}\n")
        sys.stderr.flush()
        # $BROWSER as it is now (webbrowser reads it once per process); some browsers block
        # until closed: never wait for it here.
        command = os.environ.get("BROWSER")
        browser: Any = webbrowser.GenericBrowser(shlex.split(command)) if command else None
        opener = browser.open if browser is not None else webbrowser.open
        threading.Thread(target=opener, args=(url,), daemon=True).start()

    async def wait(self) -> Any:
        """The code and state the redirect carries (within :data:`SIGN_IN_WAIT`)."""
        from mcp.client.auth import AuthorizationCodeResult

        if self._listener is None:
            raise PermissionError("the sign-in never began")
        received: dict[str, list[str]] = {}
        done = anyio.Event()

        async def handle(stream: Any) -> None:
            async with stream:
                request = (await stream.receive(65536)).decode("latin-1")
                target = request.split(" ", 2)[1] if request.count(" ") >= 2 else "/"
                received.update(parse_qs(urlparse(target).query))
                body = b"Signed in: you can close this page and go back to lmc."
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                await stream.send(head + body)
                done.set()

        async with self._listener, anyio.create_task_group() as group:
            group.start_soon(self._listener.serve, handle)
            with anyio.fail_after(SIGN_IN_WAIT):
                await done.wait()
            group.cancel_scope.cancel()
        self._listener = None
        code = received.get("code", [""])[0]
        if not code:
            error = received.get("error", ["no code came back"])[0]
            raise PermissionError(f"the sign-in did not complete ({error})")
        return AuthorizationCodeResult(code=code, state=received.get("state", [None])[0])


def oauth_provider(config: McpServerConfig) -> OAuthClientProvider:
    """The SDK's OAuth provider for ``config`` with lmc's token file and redirect."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    redirect = _Redirect()
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "lmc",
            "redirect_uris": [f"http://127.0.0.1:{REDIRECT_PORT}/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    )
    return OAuthClientProvider(
        server_url=str(config.url),
        client_metadata=metadata,
        storage=TokenFile(token_path(config.name)),
        redirect_handler=redirect.show,
        callback_handler=redirect.wait,
    )
