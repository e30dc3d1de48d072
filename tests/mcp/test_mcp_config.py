"""Server tables: Codex's [mcp_servers.NAME] read as an alias, enabled = false, the budget.

On main Codex's tables were silently ignored, there was no per-server ``enabled``, and many
servers together overflowed the context with a misleading error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.mcp_servers import toy_stdio

from lmc.config import load_settings
from lmc.errors import ConfigError
from lmc.mcp.config import parse_server
from lmc.mcp.tools import McpTools


def test_codex_tables_are_read_with_codex_names_and_lmc_tables_win(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[mcp_servers.docs]\n"
        'command = "npx"\nargs = ["-y", "@upstash/context7-mcp"]\n'
        "startup_timeout_sec = 20\ntool_timeout_sec = 90\n"
        'enabled_tools = ["search"]\ndisabled_tools = ["delete"]\nenv_vars = ["LMC_T_HOME"]\n'
        "[mcp_servers.figma]\n"
        'url = "https://mcp.example.test/mcp"\nbearer_token_env_var = "LMC_T_TOKEN"\n'
        'http_headers = { "X-Header" = "value" }\n'
        'env_http_headers = { "X-Team" = "LMC_T_TEAM" }\n'
        "[mcp_servers.both]\n"
        'command = "codex-one"\n'
        "[mcp.servers.both]\n"
        'command = "lmc-one"\n'
    )
    env = {"LMC_T_TOKEN": "tok", "LMC_T_TEAM": "blue", "LMC_T_HOME": "/home/x"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        servers = load_settings(env={}, path=path).mcp_servers
    docs, figma = servers["docs"], servers["figma"]
    assert (docs.startup_timeout, docs.timeout) == (20.0, 90.0)
    assert (docs.tools, docs.disabled_tools) == (("search",), ("delete",))
    assert dict(docs.env) == {"LMC_T_HOME": "/home/x"}
    assert dict(figma.headers) == {
        "X-Header": "value",
        "X-Team": "blue",
        "Authorization": "Bearer tok",
    }
    assert servers["both"].command == "lmc-one"


def test_a_codex_token_variable_that_is_not_set_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[mcp_servers.f]\nurl = "https://x.test/mcp"\nbearer_token_env_var = "NOPE_X"\n'
    )
    with pytest.raises(ConfigError, match=r"\[mcp_servers.f\] .*NOPE_X is not set"):
        load_settings(env={}, path=path)


def test_a_disabled_server_is_not_started_unless_named(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.off]\ncommand = "no-such-server"\nenabled = false\n')
    settings = load_settings(env={}, path=path)
    assert settings.mcp_servers["off"].enabled is False
    tools = McpTools(settings.mcp_servers)
    try:
        assert tools.descriptions() == [] and tools.notices() == []  # not even tried
    finally:
        tools.close()
    named = load_settings({"mcp": ["off"]}, env={}, path=path)
    assert named.mcp_servers["off"].enabled is True
    with pytest.raises(ConfigError, match="enabled must be true or false"):
        parse_server("x", {"command": "a", "enabled": "no"})


def test_servers_past_the_budget_are_left_out_with_a_clear_line() -> None:
    configs = {
        "first": parse_server("first", toy_stdio()),
        "second": parse_server("second", toy_stdio()),
    }
    tools = McpTools(configs, max_tools=12)
    try:
        names = [d.name for d in tools.descriptions()]
        assert names and all(name.startswith("first__") for name in names)
        [line] = tools.notices()
        count, left = len(names), 12 - len(names)
        assert re.fullmatch(
            rf"MCP server 'second' left out: its {count} tools \([\d,]+ characters\) do not fit "
            rf"what is left of the budget \({left} tools, [\d,]+ characters\); keep fewer with "
            r"its tools = \[\.\.\.\] or choose servers with --mcp NAME",
            line,
        ), line
    finally:
        tools.close()


def test_mcp_list_names_the_disabled_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmc.cli.mcp_commands import list_servers
    from lmc.cli.options import SharedOptions

    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.off]\ncommand = "no-such-server"\nenabled = false\n')
    monkeypatch.setenv("LMC_CONFIG", str(path))
    assert list_servers(SharedOptions()) == 0
    assert capsys.readouterr().out == "disabled (enabled = false): off\n"
