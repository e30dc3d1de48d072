"""The reference server ``@modelcontextprotocol/server-everything`` (from npm) through lmc, on
stdio and streamable HTTP: every tool it offers lmc, its resources and its prompts."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.everything_server import everything_bin, everything_http
from support.mcp_servers import START

from lmc.mcp.config import parse_server
from lmc.mcp.results import prompt_text, resource_chunks
from lmc.mcp.tools import McpTools
from lmc.messages import Chunk, text_of

#: Arguments for each tool, and a piece of text its answer holds.
CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "echo": ({"message": "hi there"}, "Echo: hi there"),
    "get-annotated-message": ({"messageType": "success"}, "Operation completed successfully"),
    "get-env": ({}, "PATH"),
    "get-resource-links": ({"count": 2}, "[resource "),
    "get-resource-reference": ({"resourceType": "Text", "resourceId": 1}, "Resource 1"),
    "get-structured-content": ({"location": "Chicago"}, "temperature"),
    "get-sum": ({"a": 2, "b": 40}, "42"),
    "get-tiny-image": ({}, "this model reads text only"),
    "gzip-file-as-resource": (
        {
            "name": "hello.txt.gz",
            "data": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
            "outputType": "resourceLink",
        },
        "hello.txt.gz",
    ),
    "toggle-simulated-logging": ({}, "Started simulated, random-leveled logging"),
    "toggle-subscriber-updates": ({}, "updates"),
    "trigger-long-running-operation": ({"duration": 1, "steps": 2}, "completed"),
    "get-roots-list": ({}, "Current MCP Roots (1 total)"),
}


def _text(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output")


def _tools(table: dict[str, Any], root: Path) -> McpTools:
    return McpTools({"ev": parse_server("ev", table)}, roots=[root])


@pytest.fixture(scope="module")
def stdio_table() -> dict[str, Any]:
    return {"command": str(everything_bin()), "args": ["stdio"], "startup_timeout": START}


@pytest.fixture(scope="module")
def http_table() -> Iterator[dict[str, Any]]:
    with everything_http() as url:
        yield {"url": url, "startup_timeout": START}


@pytest.mark.parametrize("transport", ["stdio_table", "http_table"])
def test_every_tool_resource_and_prompt_works(
    transport: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    tools = _tools(request.getfixturevalue(transport), tmp_path)
    try:
        offered = sorted(d.name.removeprefix("ev__") for d in tools.descriptions())
        assert offered == sorted(CALLS)
        # The one it keeps from lmc: it runs only as an MCP task.
        assert tools.notices() == [
            "MCP server 'ev': tool 'simulate-research-query' left out (it runs only as an MCP "
            "task, which lmc does not support)"
        ]
        for name, (arguments, expected) in CALLS.items():
            tool = tools.find(f"ev__{name}")
            assert tool is not None
            chunks = list(tools.stream(tool, tools.arguments(tool, _json(arguments))))
            assert expected in _text(chunks), (name, chunks)
            assert not _text(chunks).startswith("MCP server"), (name, chunks)
        roots = tools.find("ev__get-roots-list")
        assert roots is not None
        assert tmp_path.resolve().as_uri() in _text(tools.call(roots, {}))
        long = tools.find("ev__trigger-long-running-operation")
        assert long is not None
        chunks = list(tools.stream(long, {"duration": 1, "steps": 2}))
        assert [text_of(c) for c in chunks if c.get("format") == "progress"] == ["1/2", "2/2"]
        [status] = tools.statuses()
        assert len(status.resources) >= 7
        first = status.resources[0]
        read = resource_chunks(tools.manager.read_resource("ev", first.uri))
        assert _text(read).strip()
        assert {p.name for p in status.prompts} >= {"simple-prompt", "args-prompt"}
        simple = tools.manager.get_prompt("ev", "simple-prompt", {})
        assert prompt_text(simple) == "This is a simple prompt without arguments."
        args = tools.manager.get_prompt("ev", "args-prompt", {"city": "Paris", "state": "TX"})
        assert "Paris" in prompt_text(args)
    finally:
        tools.close()


def _json(arguments: dict[str, Any]) -> str:
    import json

    return json.dumps(arguments)
