"""What the recorded servers share: the turn they answer, and SSE framing.

A server answers one turn as a python tool call and, once the request carries the tool's
result, as the final answer. Only these words and the ids are the tests' own; every shape is
the real server's (see recorded_openai.py and recorded_native.py for the sources).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = [
    "AFTER",
    "ANSWER",
    "CODE",
    "REASONING",
    "Reply",
    "Route",
    "json_reply",
    "split",
    "sse",
    "tool_result_seen",
]

CODE = "print(6*7)"
ANSWER = "6*7 = 42."
REASONING = "Need to compute 6*7 with python."
AFTER = "The output is 42."

Reply = tuple[int, str, list[bytes]]  # status, content type, body chunks
Route = Callable[[dict[str, Any] | None], Reply]


def sse(*events: Any, done: bool = True) -> list[bytes]:
    chunks = [
        b"data: "
        + (e if isinstance(e, bytes) else json.dumps(e, separators=(",", ":")).encode())
        + b"\n\n"
        for e in events
    ]
    if done:
        chunks.append(b"data: [DONE]\n\n")
    return chunks


def json_reply(status: int, body: Any) -> Reply:
    return status, "application/json", [json.dumps(body, separators=(",", ":")).encode()]


def split(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def tool_result_seen(body: dict[str, Any] | None) -> bool:
    """Whether the request already carries the python tool's result."""
    if not body:
        return False
    if "prompt" in body:
        return "<|start|>python to=assistant" in str(body["prompt"])
    messages = body.get("messages") or body.get("input") or []
    return isinstance(messages, list) and any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("type") == "function_call_output")
        for m in messages
    )
