"""MCP tools through `lmc serve`: a call streams, pauses for go or decline, and runs."""

from __future__ import annotations

import json
from collections.abc import Callable

from support.mcp_servers import toy_stdio
from support.server_testing import Frame, Served, final, is_confirmation, outputs


def tool_call(function: str, arguments: dict[str, int]) -> str:
    return (
        f"<|channel|>commentary to=functions.{function} <|constrain|>json<|message|>"
        f"{json.dumps(arguments)}<|call|>"
    )


def answer(chunks: list[Frame]) -> str:
    return "".join(
        c["content"]
        for c in chunks
        if (c["role"], c["type"]) == ("assistant", "message") and "content" in c
    )


def test_a_tool_call_waits_for_go_then_runs(serve: Callable[..., Served]) -> None:
    served = serve(
        tool_call("toy__add", {"a": 2, "b": 3}),
        final("2 + 3 is 5."),
        mcp_servers={"toy": toy_stdio()},
    )
    client = served.client()
    client.say("add 2 and 3")
    before = client.until(is_confirmation)
    call = "".join(
        c.get("content", "")
        for c in before
        if (c["type"], c.get("format")) == ("tool_call", "toy.add")
    )
    assert call == '{"a": 2, "b": 3}'
    assert before[-1]["content"] == {
        "type": "tool_call",
        "format": "toy.add",
        "content": '{"a": 2, "b": 3}',
    }
    assert outputs(before) == ""  # nothing ran before the person said go
    client.command("go")
    after = client.turn()
    assert outputs(after) == "2 + 3 = 5\n"
    assert answer(after) == "2 + 3 is 5."
    client.close()


def test_a_declined_tool_call_does_not_run(serve: Callable[..., Served]) -> None:
    served = serve(
        tool_call("toy__add", {"a": 2, "b": 3}),
        final("Not added."),
        mcp_servers={"toy": toy_stdio()},
    )
    client = served.client()
    client.say("add 2 and 3")
    client.until(is_confirmation)
    client.command("decline")
    after = client.turn()
    assert "2 + 3 = 5" not in outputs(after)
    assert answer(after) == "Not added."
    client.close()
