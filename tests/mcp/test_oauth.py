"""OAuth for HTTP servers against the SDK's own authorization server: the 401 hint, ``lmc mcp
login`` (authorization code with PKCE, dynamic registration), the token kept 0600 and used
and refreshed on later starts without signing in again. On main there was no OAuth at all and
a 401 said only "Server returned an error response"."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.mcp_servers import START, free_port, wait_listening

from lmc.mcp.config import parse_server
from lmc.mcp.oauth import token_path
from lmc.mcp.tools import McpTools
from lmc.messages import Chunk, text_of

SUPPORT = Path(__file__).resolve().parents[1] / "support"
#: A signed-in access token lives this long: past the login, yet within lmc's 30 s margin, so
#: the next start must refresh it (without a sleep in the test).
EXPIRES_IN = 20


@pytest.fixture
def oauth_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SUPPORT / "mcp_oauth_server.py"), str(port), str(EXPIRES_IN)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def _text(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output")


def test_a_401_without_oauth_says_what_to_do(oauth_url: str) -> None:
    tools = McpTools({"signed": parse_server("signed", {"url": oauth_url, "timeout": START})})
    try:
        assert tools.descriptions() == []
        assert tools.notices() == [
            "MCP server 'signed' failed to start: Server returned an error response (HTTP 401: "
            "the server asks for OAuth: set oauth = true in its table and run `lmc mcp login "
            "signed`, or give a token in headers)"
        ]
    finally:
        tools.close()


def test_login_keeps_a_private_token_that_later_starts_use_and_refresh(
    oauth_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lmc.cli.mcp_commands import login
    from lmc.cli.options import SharedOptions

    config = tmp_path / "config.toml"
    config.write_text(f'[mcp.servers.signed]\nurl = "{oauth_url}"\noauth = true\n')
    monkeypatch.setenv("LMC_CONFIG", str(config))
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BROWSER", f"{sys.executable} {SUPPORT / 'oauth_browser.py'} %s")
    assert login(SharedOptions(), "signed") == 0
    path = token_path("signed")
    assert capsys.readouterr().out == f"signed in to signed; its token is kept in {path}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    monkeypatch.setenv("BROWSER", "false")  # no second sign-in
    table = {"url": oauth_url, "oauth": True, "timeout": START}
    tools = McpTools({"signed": parse_server("signed", table)})
    try:
        refreshes = tools.find("signed__refreshes")
        assert refreshes is not None, tools.notices()
        assert _text(tools.call(refreshes, {})) == "1\n"
    finally:
        tools.close()
    assert os.stat(path).st_size > 0
