"""The chunk-to-update mapping on its own: every payload it makes is a valid ACP update."""

from __future__ import annotations

import itertools
from typing import Any

from acp.schema import SessionNotification
from support.acp_schema import check

from lmc.acp.updates import Updates, fenced, message_chunks, tool_kind
from lmc.messages import Chunk, CodeFormat


def _feed(updates: Updates, chunks: list[Chunk]) -> list[dict[str, Any]]:
    out = [u for chunk in chunks for u in updates.feed(chunk)]
    for update in out:
        check(SessionNotification, {"sessionId": "s", "update": update})
    return out


def _code(fmt: CodeFormat, text: str) -> list[Chunk]:
    return [
        {"role": "assistant", "type": "code", "format": fmt, "start": True},
        {"role": "assistant", "type": "code", "format": fmt, "content": text},
        {"role": "assistant", "type": "code", "format": fmt, "end": True},
    ]


CONSOLE: list[Chunk] = [
    {"role": "computer", "type": "console", "start": True},
    {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
    {"role": "computer", "type": "console", "format": "output", "content": "hello\n"},
    {"role": "computer", "type": "image", "format": "base64.png", "content": "iVBORw0KGgo="},
    {"role": "computer", "type": "console", "end": True},
]


def test_a_code_block_is_announced_runs_and_ends_with_its_output_and_image() -> None:
    ticks = itertools.count(0, 10)
    updates = Updates(clock=lambda: float(next(ticks)))
    out = _feed(updates, [*_code("shell", "echo hello"), *CONSOLE])
    out += updates.finish()
    assert [u.get("status") for u in out] == ["pending", "in_progress", "in_progress", "completed"]
    assert out[0]["title"] == "shell: echo hello" and out[0]["kind"] == "execute"
    last = out[-1]["content"]
    assert last[0]["content"]["text"] == "```shell\necho hello\n```"
    assert last[1]["content"]["text"] == "```\nhello\n```"
    assert last[2]["content"] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    assert updates.stop_reason(cancelled=False) == "end_turn"


def test_a_declined_block_fails_and_notes_set_the_stop_reason() -> None:
    updates = Updates()
    out = _feed(updates, _code("python", "rm()"))
    updates.declined()
    out += _feed(
        updates,
        [
            {"role": "computer", "type": "console", "start": True},
            {"role": "computer", "type": "console", "format": "output", "content": "declined\n"},
            {"role": "computer", "type": "console", "end": True},
            {"role": "computer", "type": "message", "content": "Stopped at the step limit: 1"},
        ],
    )
    out += updates.finish()
    statuses = [u["status"] for u in out if "status" in u]
    assert statuses == ["pending", "failed"]
    assert updates.stop_reason(cancelled=False) == "max_turn_requests"
    assert updates.stop_reason(cancelled=True) == "cancelled"


def test_text_channels_and_a_replayed_history() -> None:
    updates = Updates()
    messages: list[Chunk] = [
        {"role": "user", "type": "message", "content": "hi"},
        {"role": "assistant", "type": "reasoning", "content": "thinking"},
        {"role": "assistant", "type": "tool_call", "format": "fs.read_file", "content": "{}"},
        {"role": "assistant", "type": "message", "content": "hello"},
    ]
    out = _feed(updates, [c for m in messages for c in message_chunks(m)])
    kinds = [u["sessionUpdate"] for u in out]
    assert kinds == [
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert out[2]["kind"] == "read" and out[2]["rawInput"] == {}


def test_tool_kinds_and_fences() -> None:
    assert tool_kind("browser.search") == "search"
    assert tool_kind("browser.open") == "fetch"
    assert tool_kind("apply_patch") == "edit"
    assert tool_kind("weather.today") == "other"
    assert fenced("a ``` b").startswith("````\n")


def test_a_patch_call_is_an_edit_with_its_text_as_input() -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    updates = Updates()
    call: Chunk = {
        "role": "assistant",
        "type": "tool_call",
        "format": "apply_patch",
        "content": patch,
    }
    out = _feed(updates, message_chunks(call))
    assert out[0]["kind"] == "edit" and out[0]["rawInput"] == {"input": patch}
    assert out[0]["content"][0]["content"]["text"].startswith("```\n*** Begin Patch")
