"""Servers that misbehave degrade alone: each case failed on main (see each test)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.mcp_servers import START, toy_stdio

from lmc.mcp.config import parse_server
from lmc.mcp.tools import McpTools
from lmc.messages import Chunk, text_of

RUDE = Path(__file__).resolve().parents[1] / "support" / "mcp_rude_server.py"


def _tools(verbose: bool = False, **servers: dict[str, object]) -> McpTools:
    configs = {name: parse_server(name, table) for name, table in servers.items()}
    return McpTools(configs, roots=[Path.cwd()], verbose=verbose)


def _text(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output")


@pytest.fixture
def rude() -> Iterator[McpTools]:
    tools = _tools(
        verbose=True,
        rude={"command": sys.executable, "args": [str(RUDE)], "startup_timeout": START},
    )
    yield tools
    tools.close()


def test_bad_tools_are_left_out_one_line_each_and_the_rest_work(
    rude: McpTools, caplog: pytest.LogCaptureFixture
) -> None:
    # On main: the tool without an inputSchema failed the whole server, task_only was offered,
    # get_item silently replaced get.item, and each stdout line cost a traceback.
    caplog.set_level(logging.DEBUG)
    assert [d.name for d in rude.descriptions()] == ["rude__echo", "rude__get_item", "rude__bye"]
    echo = rude.find("rude__echo")
    assert echo is not None
    assert _text(rude.call(echo, {"x": 1})) == 'echo {"x": 1}\n'
    assert rude.notices() == [
        "MCP server 'rude': tool 'no_schema' left out (inputSchema: Field required)",
        "MCP server 'rude': tool 'task_only' left out (it runs only as an MCP task, which lmc "
        "does not support)",
        "MCP server 'rude': tools 'get.item' and 'get_item' both become functions.rude__get_item;"
        " 'get_item' left out",
        "MCP server 'rude' writes lines that are not MCP on its stdout; lmc ignores them (first: "
        "'Rude MCP server 1.0 -- starting up')",
    ]
    assert rude.notices() == []  # said once
    assert "Failed to parse JSONRPC message" not in caplog.text
    assert "Traceback" not in caplog.text


def test_stdout_noise_is_said_only_with_verbose() -> None:
    tools = _tools(toy=toy_stdio("noisy"))
    try:
        assert "toy__add" in [d.name for d in tools.descriptions()]
        assert tools.notices() == []
        assert tools.manager.not_protocol_lines("toy") == (2, "Toy MCP server v1 starting")
    finally:
        tools.close()


def test_a_server_that_crashed_between_calls_restarts_on_the_next_call(rude: McpTools) -> None:
    # On main the next call failed ("Connection closed") and only the one after restarted it.
    bye, echo = rude.find("rude__bye"), rude.find("rude__echo")
    assert bye is not None and echo is not None
    assert _text(rude.call(bye, {})) == "bye {}\n"
    connection = rude.manager._connections["rude"]
    notes = connection.notes
    assert notes is not None
    rude.manager._open().call(notes.ended.wait)  # the process is gone
    assert _text(rude.call(echo, {"n": 2})) == 'echo {"n": 2}\n'
    assert connection.restarts == 1


def test_lmc_introduces_itself_with_its_version_and_roots() -> None:
    # On main the clientInfo was the SDK's default ("mcp") and no roots were offered.
    from lmc import __version__

    tools = _tools(
        rude={"command": sys.executable, "args": [str(RUDE)], "startup_timeout": START},
        toy=toy_stdio(),
    )
    try:
        tools.descriptions()
        offer = tools.manager._connections["rude"].offer
        assert offer.server_name == f"rude (client lmc {__version__}, roots True)"
        assert offer.server_version == "9.9"
        roots = tools.find("toy__roots")
        assert roots is not None
        assert _text(tools.call(roots, {})) == Path.cwd().resolve().as_uri() + "\n"
    finally:
        tools.close()


def test_progress_notifications_stream_as_live_status_chunks() -> None:
    # On main a long call showed nothing until it ended.
    tools = _tools(toy=toy_stdio())
    try:
        steps = tools.find("toy__steps")
        assert steps is not None
        chunks = list(tools.stream(steps, {}))
        assert [text_of(c) for c in chunks if c.get("format") == "progress"] == [
            "step 1 (1/3)",
            "step 2 (2/3)",
            "step 3 (3/3)",
        ]
        assert _text(chunks) == "three steps done\n"
    finally:
        tools.close()


def test_a_hanging_initialize_is_answered_at_its_timeout_while_the_stop_goes_on(
    tmp_path: Path,
) -> None:
    # On main the report waited for the stop too (timeout + up to 10 s). Here the report comes
    # while the mute server, which ignores SIGTERM, is still being stopped in the background.
    pid_file = tmp_path / "pid"
    script = f"echo $$ > {pid_file}; trap '' TERM; while true; do sleep 1; done"
    tools = _tools(mute={"command": "bash", "args": ["-c", script], "timeout": 1})
    try:
        assert tools.descriptions() == []
        assert tools.notices() == ["MCP server 'mute' did not start within 1 s"]
        pid = int(pid_file.read_text())
        os.kill(pid, 0)  # still there: the report did not wait for the stop
    finally:
        tools.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, signal.SIG_DFL)


def test_a_missing_npx_package_shows_npms_404(tmp_path: Path) -> None:
    # On main the line shown was npm's last ("A complete log of this run can be found in ...").
    env = {"npm_config_cache": str(tmp_path / "npm"), "PATH": os.environ["PATH"]}
    table = {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-lmc-test-no-such-package"],
        "env": env,
        "startup_timeout": START,
    }
    tools = _tools(gone=table)
    try:
        assert tools.descriptions() == []
        [line] = tools.notices()
        assert line.startswith("MCP server 'gone' failed to start: Connection closed (its last")
        assert "404" in line or "is not in this registry" in line
        assert "A complete log" not in line
    finally:
        tools.close()
