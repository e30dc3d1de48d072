"""Calls to ``functions.SERVER__TOOL`` (MCP tools) become LMC ``tool_call`` chunks."""

from __future__ import annotations

import pytest

from lmc.harmony.to_lmc import completion_to_chunks, tool_call_format
from lmc.messages import assemble, validate_chunk


@pytest.mark.parametrize(
    ("recipient", "fmt"),
    [
        ("functions.github__search_issues", "github.search_issues"),
        ("functions.github__search_issues <|constrain|>json", "github.search_issues"),
        ("functions.my-db__query__v2", "my-db.query__v2"),
        ("functions.shell", None),
        ("functions.__x", None),
        ("functions.x__", None),
        ("python", None),
        ("github__search", None),
        (None, None),
    ],
)
def test_tool_call_format(recipient: str | None, fmt: str | None) -> None:
    assert tool_call_format(recipient) == fmt


def test_a_tool_call_streams_its_json_arguments_as_written() -> None:
    completion = (
        "<|channel|>commentary to=functions.db__query <|constrain|>json<|message|>"
        '{"sql": "select 1", "code": "not a code field"}<|call|>'
    )
    chunks = completion_to_chunks(completion)
    assert all(validate_chunk(c) == c for c in chunks)
    assert chunks[0] == {
        "role": "assistant",
        "type": "tool_call",
        "format": "db.query",
        "start": True,
    }
    assert chunks[-1] == {
        "role": "assistant",
        "type": "tool_call",
        "format": "db.query",
        "end": True,
    }
    assert assemble(chunks) == [
        {
            "role": "assistant",
            "type": "tool_call",
            "format": "db.query",
            "content": '{"sql": "select 1", "code": "not a code field"}',
        }
    ]


@pytest.mark.parametrize("fmt", ["noserver", "a b.c", ".tool", "server.", "a.b c"])
def test_a_tool_call_format_must_be_server_dot_tool(fmt: str) -> None:
    from lmc.errors import MessageError

    with pytest.raises(MessageError, match="unknown format"):
        validate_chunk({"role": "assistant", "type": "tool_call", "format": fmt, "content": "{}"})
