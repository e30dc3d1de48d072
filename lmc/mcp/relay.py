"""What lmc lets through from a server's transport to the SDK's session, and what it notes.

A server's stdout is the protocol, yet real servers print banners and log lines there, and a
server may list one tool that is not valid MCP (no input schema, say). The SDK logs a traceback
for every line it cannot parse and fails the whole ``tools/list`` for one bad tool. The relay
sits between the transport and the :class:`~mcp.ClientSession` (both public pieces): it drops
lines that are not MCP, noting the first, takes invalid tools out of a tool list with one line
each, and says when the transport ended, so a crashed server is known to be gone before the
next call is made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["RelayNotes", "quiet_sdk_parse_errors", "relay"]

#: The SDK's message for a stdout line it cannot parse (logged with a traceback per line).
_PARSE_FAILURE = "Failed to parse JSONRPC message from server"


class _DropParseFailures(logging.Filter):
    """Drops the SDK's per-line traceback: the relay notes such lines once instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _PARSE_FAILURE


_FILTER = _DropParseFailures()


def quiet_sdk_parse_errors() -> None:
    """Install the filter on the SDK's stdio logger (idempotent)."""
    logger = logging.getLogger("mcp.client.stdio")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


@dataclass
class RelayNotes:
    """What the relay saw: lines that were not MCP, tools left out, and the end."""

    not_protocol: int = 0
    first_line: str = ""
    left_out: list[str] = field(default_factory=list)
    ended: anyio.Event = field(default_factory=anyio.Event)


def _line_of(exc: Exception) -> str:
    """The offending stdout line, from the SDK's parse error (pydantic keeps the input)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # not pydantic's: nothing to show but the error itself
            found = []
        for error in found:
            text = error.get("input") if isinstance(error, dict) else None
            if isinstance(text, str):
                return " ".join(text.split())[:200]
    return " ".join(str(exc).split())[:200]


def _tool_problem(raw: Any) -> str | None:
    """Why a listed tool cannot be used, or None when it can."""
    from mcp.types import Tool
    from pydantic import ValidationError

    try:
        Tool.model_validate(raw, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the tool"
        return f"{where}: {first.get('msg', 'invalid')}"
    schema = raw.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "inputSchema: not an object schema"
    return None


def _tool_name(raw: Any) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    return repr(name) if isinstance(name, str) else "(unnamed)"


def _filter_tools(message: SessionMessage, notes: RelayNotes) -> SessionMessage:
    """A ``tools/list`` answer with the tools that are not valid MCP taken out (noted)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCResponse

    inner = message.message
    if not isinstance(inner, JSONRPCResponse):
        return message
    tools = inner.result.get("tools")
    if not isinstance(tools, list):
        return message
    kept = []
    for raw in tools:
        problem = _tool_problem(raw) if isinstance(raw, dict) else "not an object"
        if problem is None:
            kept.append(raw)
        else:
            notes.left_out.append(f"tool {_tool_name(raw)} left out ({problem})")
    if len(kept) == len(tools):
        return message
    result = {**inner.result, "tools": kept}
    response = JSONRPCResponse(jsonrpc="2.0", id=inner.id, result=result)
    return SessionMessage(response, message.metadata)


async def relay(
    source: ObjectReceiveStream[SessionMessage | Exception],
    sink: ObjectSendStream[SessionMessage | Exception],
    notes: RelayNotes,
) -> None:
    """Pass ``source`` on to ``sink`` until it ends; then close ``sink`` and set ``ended``."""
    try:
        async with sink:
            async for item in source:
                if isinstance(item, Exception):
                    notes.not_protocol += 1
                    if notes.not_protocol == 1:
                        notes.first_line = _line_of(item)
                    continue
                await sink.send(_filter_tools(item, notes))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass  # the session closed first: the connection is ending anyway
    finally:
        notes.ended.set()
