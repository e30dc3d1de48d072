"""McpManager and McpTools against real MCP servers (the SDK's own), over stdio and HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.mcp_servers import cancel_when_in_flight, toy_stdio

from lmc.mcp.config import parse_server
from lmc.mcp.tools import McpTools
from lmc.messages import Chunk, text_of

TOOLS = [
    "toy__add",
    "toy__remember",
    "toy__red_dot",
    "toy__fail",
    "toy__slow",
    "toy__patient",
    "toy__steps",
    "toy__roots",
    "toy__crash",
]


def _tools(**servers: dict[str, object]) -> McpTools:
    return McpTools({name: parse_server(name, table) for name, table in servers.items()})


@pytest.fixture
def toy() -> Iterator[McpTools]:
    tools = _tools(toy=toy_stdio(timeout=60))
    yield tools
    tools.close()


def _text(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("format") == "output")


def test_lists_the_tools_with_descriptions_and_schemas(toy: McpTools) -> None:
    described = {d.name: d for d in toy.descriptions()}
    assert list(described) == TOOLS
    add = described["toy__add"]
    assert add.description == "Add two whole numbers.\nReturns their sum."
    assert add.parameters is not None
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.parameters["required"] == ["a", "b"]
    assert described["toy__red_dot"].parameters is None  # no arguments: () => any
    assert toy.notices() == []


def test_calls_keep_the_servers_state_and_map_text_images_and_errors(toy: McpTools) -> None:
    add = toy.find("toy__add")
    assert add is not None and add.format == "toy.add"
    assert toy.call(add, {"a": 2, "b": 3}) == [
        {"role": "computer", "type": "console", "format": "output", "content": "2 + 3 = 5\n"}
    ]
    remember = toy.find("toy__remember")
    assert remember is not None
    toy.call(remember, {"note": "milk"})
    assert _text(toy.call(remember, {"note": "eggs"})) == ("remembered 2 note(s): milk, eggs\n")
    dot = toy.find("toy__red_dot")
    assert dot is not None
    image, note = toy.call(dot, {})
    assert image["type"] == "image" and image["format"] == "base64.png"
    assert str(image["content"]).startswith("iVBORw0KGgo")
    # gpt-oss reads text only: it is told what it cannot see.
    assert note["content"] == (
        "[the tool returned an image (image/png, 1x1, 70 bytes): it is shown to the user; this "
        "model reads text only]\n"
    )
    fail = toy.find("toy__fail")
    assert fail is not None
    assert _text(toy.call(fail, {"message": "no such issue"})) == (
        "The tool reported an error:\nError executing tool fail: no such issue\n"
    )


def test_arguments_are_checked_against_the_schema_with_an_exact_message(toy: McpTools) -> None:
    add = toy.find("toy__add")
    assert add is not None
    assert toy.arguments(add, '{"a": 1, "b": 2}') == {"a": 1, "b": 2}
    with pytest.raises(ValueError) as wrong:
        toy.arguments(add, '{"a": "one"}')
    assert str(wrong.value) == (
        "The arguments to functions.toy__add do not match its schema: b: missing (required, "
        'expected number); a: expected number, got "one". Call it again with arguments that '
        "match the schema."
    )
    with pytest.raises(ValueError, match=r"^The arguments to functions.toy__add are not valid"):
        toy.arguments(add, '{"a": 1,')
    with pytest.raises(ValueError, match="must be a JSON object, not list"):
        toy.arguments(add, "[1, 2]")


def test_a_server_that_crashes_mid_call_is_reported_and_restarted(toy: McpTools) -> None:
    remember, crash = toy.find("toy__remember"), toy.find("toy__crash")
    assert remember is not None and crash is not None
    toy.call(remember, {"note": "before"})
    assert _text(toy.call(crash, {})) == (
        "MCP server 'toy' stopped during the call (Connection closed; its last message: toy "
        "server: crashing on purpose): it restarts on next use\n"
    )
    # Started again on next use: a fresh process, so the note from before is gone.
    assert _text(toy.call(remember, {"note": "after"})) == "remembered 1 note(s): after\n"


def test_a_call_past_its_timeout_is_cancelled_with_mcp_and_the_server_lives_on() -> None:
    # On main the server was stopped (its state lost) and restarted on the next use.
    tools = _tools(toy=toy_stdio(timeout=1))
    try:
        patient, remember = tools.find("toy__patient"), tools.find("toy__remember")
        assert patient is not None and remember is not None
        assert _text(tools.call(patient, {"seconds": 600})) == (
            "MCP server 'toy' did not answer patient within 1 s: the call was cancelled (the "
            "server goes on)\n"
        )
        # The same process: it got notifications/cancelled (its handler noted it) and goes on.
        assert _text(tools.call(remember, {"note": "x"})) == (
            "remembered 2 note(s): patient was cancelled, x\n"
        )
    finally:
        tools.close()


def test_a_running_call_is_cancelled_from_another_thread(toy: McpTools) -> None:
    slow = toy.find("toy__slow")
    assert slow is not None
    watcher = cancel_when_in_flight(toy.manager, toy.cancel)
    assert _text(toy.call(slow, {"seconds": 600})) == "the call to toy.slow was cancelled\n"
    watcher.join()
    add = toy.find("toy__add")
    assert add is not None
    assert _text(toy.call(add, {"a": 1, "b": 1})) == "1 + 1 = 2\n"


def test_servers_that_fail_to_start_are_reported_once_and_the_others_work() -> None:
    tools = _tools(
        toy=toy_stdio(),
        broken=toy_stdio("broken"),
        missing={"command": "/nonexistent/mcp-server", "startup_timeout": 60},
    )
    try:
        assert [d.name for d in tools.descriptions()] == TOOLS
        assert tools.notices() == [
            "MCP server 'broken' failed to start: Connection closed (its last message: toy "
            "server: cannot open its database)",
            "MCP server 'missing' failed to start: [Errno 2] No such file or directory: "
            "'/nonexistent/mcp-server'",
        ]
        assert tools.notices() == []  # said once
    finally:
        tools.close()


def test_a_server_that_never_answers_delays_the_tools_by_its_timeout_only() -> None:
    # `sleep` starts at once and never answers the initialize request.
    tools = _tools(toy=toy_stdio(), mute={"command": "sleep", "args": ["600"], "timeout": 2})
    try:
        assert [d.name for d in tools.descriptions()] == TOOLS  # the toy works meanwhile
        assert tools.notices() == ["MCP server 'mute' did not start within 2 s"]
    finally:
        tools.close()


def test_the_allow_list_keeps_only_the_tools_named() -> None:
    tools = _tools(toy=toy_stdio(tools=["add", "red_dot", "sub"], auto_approve=["add", "mul"]))
    try:
        assert [d.name for d in tools.descriptions()] == ["toy__add", "toy__red_dot"]
        assert tools.notices() == [
            "MCP server 'toy' has no tool 'sub', 'mul' (named in its tools or auto_approve)"
        ]
        add, dot = tools.find("toy__add"), tools.find("toy__red_dot")
        assert add is not None and add.auto_approve
        assert dot is not None and not dot.auto_approve
        assert tools.find("toy__crash") is None
    finally:
        tools.close()


def test_streamable_http_server(toy_http_url: str) -> None:
    tools = _tools(web={"url": toy_http_url, "headers": {"X-Test": "1"}, "startup_timeout": 120})
    try:
        assert [d.name for d in tools.descriptions()] == [n.replace("toy", "web") for n in TOOLS]
        add, remember = tools.find("web__add"), tools.find("web__remember")
        assert add is not None and remember is not None
        assert _text(tools.call(add, {"a": 40, "b": 2})) == "40 + 2 = 42\n"
        dot = tools.find("web__red_dot")
        assert dot is not None
        assert tools.call(dot, {})[0].get("format") == "base64.png"
    finally:
        tools.close()
