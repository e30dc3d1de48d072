"""MCP from the command line: config.toml servers, --mcp/--no-mcp, `lmc mcp list`, doctor, and
a run whose model calls a real MCP server (the SDK's) in plain and --json output."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli_replays import final
from support.mcp_servers import toy_stdio
from typer.testing import CliRunner, Result

from lmc.cli.app import app
from lmc.config import load_settings
from lmc.errors import ConfigError

Replay = Callable[..., Path]
ARGS = '{"a": 2, "b": 3}'


def _run(env: dict[str, str], *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


def _toml_table(name: str, table: dict[str, Any]) -> str:
    lines = [f"[{name}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def _config(env: dict[str, str], text: str) -> Path:
    path = Path(env["LMC_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def call(function: str, arguments: str) -> str:
    return (
        f"<|channel|>commentary to=functions.{function} <|constrain|>json<|message|>"
        f"{arguments}<|call|>"
    )


# -- configuration -----------------------------------------------------------------------------


def test_servers_come_from_the_file_and_profiles_and_flags_choose(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'model = "m.gguf"\n'
        "[mcp.servers.files]\n"
        'command = "files-server"\nargs = ["--root", "/tmp"]\nenv = {TOKEN = "x"}\n'
        'auto_approve = ["read"]\ntimeout = 5\n'
        "[mcp.servers.issues]\n"
        'url = "https://example.test/mcp"\nheaders = {Authorization = "Bearer t"}\n'
        'tools = ["search"]\n'
        "[work]\nreasoning = 'low'\n"
        "[work.mcp.servers.calendar]\n"
        'command = "cal"\n'
    )
    settings = load_settings(env={}, path=path)
    files, issues = settings.mcp_servers["files"], settings.mcp_servers["issues"]
    assert (files.command, files.args) == ("files-server", ("--root", "/tmp"))
    assert dict(files.env) == {"TOKEN": "x"}
    assert (files.auto_approve, files.timeout, files.transport) == (("read",), 5.0, "stdio")
    assert (issues.url, dict(issues.headers), issues.tools) == (
        "https://example.test/mcp",
        {"Authorization": "Bearer t"},
        ("search",),
    )
    assert issues.transport == "http" and issues.timeout == 60.0
    work = load_settings(profile="work", env={}, path=path)
    assert sorted(work.mcp_servers) == ["calendar", "files", "issues"]
    assert work.reasoning == "low"
    only = load_settings({"mcp": ["issues"]}, env={}, path=path)
    assert list(only.mcp_servers) == ["issues"]
    assert load_settings({"no_mcp": True}, env={}, path=path).mcp_servers == {}
    with pytest.raises(ConfigError, match="--mcp: no MCP server named 'nope'"):
        load_settings({"mcp": ["nope"]}, env={}, path=path)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('command = "a"\nurl = "http://x"', "needs either command (stdio) or url"),
        ("args = []", "needs either command (stdio) or url"),
        ('url = "ftp://x"', "url must start with http:// or https://"),
        ('command = "a"\ntimeout = 0', "timeout must be a positive number of seconds"),
        ('command = "a"\ntools = "add"', "tools must be a list of strings"),
        ('command = "a"\nport = 1', "unknown key 'port'"),
        ('url = "http://x"\ncwd = "/"', "args, env and cwd are for stdio servers"),
    ],
)
def test_a_bad_server_table_is_one_line(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[mcp.servers.s]\n{table}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(env={}, path=path)


def test_a_server_name_with_a_double_underscore_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.a__b]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="the server name may hold letters, digits"):
        load_settings(env={}, path=path)


# -- lmc mcp list, doctor ------------------------------------------------------------------------


def test_mcp_list_starts_each_server_and_lists_its_tools(lmc_env: dict[str, str]) -> None:
    _config(
        lmc_env,
        _toml_table("mcp.servers.toy", toy_stdio(auto_approve=["add"]))
        + _toml_table("mcp.servers.broken", toy_stdio("broken")),
    )
    result = _run(lmc_env, "mcp", "list")
    assert result.exit_code == 1  # one server did not start
    lines = result.stdout.splitlines()
    assert lines[0].startswith("toy (stdio: ") and lines[0].endswith("mcp_toy_server.py)")
    # Resources and prompts too (on main only tools were listed).
    assert lines[1:15] == [
        "  ✓ started, 9 tools, 1 resource, 1 prompt",
        "    add       Add two whole numbers. (auto-approved)",
        "    remember  Remember a note for later calls.",
        "    red_dot   A red dot, as a PNG image.",
        "    fail      Always fails with the message given.",
        "    slow      Sleep for some seconds, then say so.",
        "    patient   Wait (without blocking the server); notes it when cancelled.",
        "    steps     Report progress three times, then finish.",
        "    roots     The client's roots, one URI a line.",
        "    crash     Exit the server process in the middle of the call.",
        "  resources:",
        "    note://today  today",
        "  prompts:",
        "    review(code)  Ask for a review of some code.",
    ]
    assert lines[15].startswith("broken (stdio: ")
    assert lines[16] == (
        "  ✗ MCP server 'broken' failed to start: Connection closed (its last message: toy "
        "server: cannot open its database)"
    )
    only = _run(lmc_env, "mcp", "list", "--mcp", "toy")
    assert only.exit_code == 0 and "broken" not in only.stdout


def test_mcp_list_without_servers(lmc_env: dict[str, str]) -> None:
    result = _run(lmc_env, "mcp", "list")
    assert result.exit_code == 0
    assert result.stdout.startswith("no MCP servers configured: add [mcp.servers.NAME] to ")


def test_doctor_includes_the_servers(lmc_env: dict[str, str], tiny_model: Path) -> None:
    _config(
        lmc_env,
        _toml_table("mcp.servers.toy", toy_stdio())
        + _toml_table("mcp.servers.broken", toy_stdio("broken")),
    )
    result = _run(lmc_env, "doctor", "-m", str(tiny_model))
    assert "mcp\n  ✓ toy          9 tools\n  ✗ broken       MCP server 'broken' failed" in (
        result.stdout
    )


# -- a run that calls a tool -------------------------------------------------------------------


def test_run_calls_the_tool_in_plain_and_json_output(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    _config(lmc_env, _toml_table("mcp.servers.toy", toy_stdio()))
    path = replay(call("toy__add", '{"a": 2, "b": 3}'), final("It is 5."))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "2+3?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == '```toy.add\n{"a": 2, "b": 3}\n```\n2 + 3 = 5\nIt is 5.\n\n'

    path = replay(call("toy__add", '{"a": 2, "b": 3}'), final("It is 5."))
    result = _run(
        lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "--json", "2+3?"
    )
    assert result.exit_code == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    call_end = next(i for i, c in enumerate(chunks) if c.get("end"))
    base = {"role": "assistant", "type": "tool_call", "format": "toy.add"}
    assert chunks[0] == {**base, "start": True}
    assert chunks[call_end] == {**base, "end": True}
    pieces = chunks[1:call_end]  # the arguments stream as the model writes them
    assert all(set(c) == {*base, "content"} and c.items() >= base.items() for c in pieces)
    assert "".join(c["content"] for c in pieces) == ARGS
    chunks = chunks[call_end - 2 :]
    assert chunks[3] == {
        "role": "computer",
        "type": "confirmation",
        "format": "execution",
        "content": {"type": "tool_call", "format": "toy.add", "content": ARGS},
    }
    assert chunks[4:7] == [
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "output", "content": "2 + 3 = 5\n"},
        {"role": "computer", "type": "console", "end": True},
    ]


def test_without_a_terminal_a_tool_call_stops_the_run_and_no_mcp_drops_the_servers(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay
) -> None:
    _config(lmc_env, _toml_table("mcp.servers.toy", toy_stdio()))
    path = replay(call("toy__remember", '{"note": "x"}'), final("Declined."))
    result = _run(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "--json", "go")
    assert result.exit_code == 1  # nobody to ask: stopped, not declined silently
    assert "a tool call needs your confirmation and there is no terminal to ask" in result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    assert chunks[-1]["type"] == "confirmation"  # the tool was never called
    assert not any(c.get("format") == "output" for c in chunks)

    path = replay(call("toy__add", '{"a": 1, "b": 1}'), final("No such tool."))
    result = _run(
        lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "-y", "--no-mcp", "go"
    )
    assert result.exit_code == 0, result.stderr
    assert "There is no tool named 'functions.toy__add'" in result.stdout
