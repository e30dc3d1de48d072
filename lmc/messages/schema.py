"""The LMC vocabulary (roles, types, formats) and validation of chunks and messages.

Chunks and messages are plain dicts, exactly as Open Interpreter's streaming response shows
them, so that they serialise to JSON as they are and any consumer can read them without lmc.
A *chunk* is one streamed piece (it may carry only a ``start`` or ``end`` flag); a *message*
is what chunks merge into (see :mod:`lmc.messages.assemble`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from lmc.errors import MessageError

__all__ = [
    "CODE_FORMATS",
    "FORMATS_BY_TYPE",
    "ROLES",
    "TOOL_CALL_FORMAT",
    "TYPES",
    "Chunk",
    "Message",
    "confirmation_chunk",
    "validate_chunk",
    "validate_message",
]

Chunk = dict[str, Any]
Message = dict[str, Any]

ROLES: Final = ("user", "assistant", "computer")

#: The languages lmc runs, declared once: the computer's table (lmc.computer.languages) has an
#: entry for each, and the model's function tools (lmc.agent.tools) are these but python.
CODE_FORMATS: Final = ("python", "shell", "javascript", "r", "applescript", "html")

#: Which formats each type allows. ``None`` means the type carries no format.
#: ``reasoning`` is lmc's own type for chain-of-thought (the analysis channel), kept apart from
#: ``message`` so a consumer that shows every message never shows reasoning by accident.
FORMATS_BY_TYPE: Final[Mapping[str, tuple[str | None, ...]]] = {
    "message": (None,),
    "reasoning": (None,),
    # "progress": a live status line of a long MCP call (not output; the model never reads it).
    "console": ("active_line", "output", "progress"),
    "image": ("base64", "base64.png", "base64.jpeg", "path"),
    "code": CODE_FORMATS,
    "audio": ("wav",),
    "confirmation": ("execution",),
    # lmc's extension: a call to an MCP tool; its format is "SERVER.TOOL" (see TOOL_CALL_FORMAT).
    "tool_call": (),
    # lmc's extension: the files a code block changed, as a list of
    # {"path", "change" ("added"|"deleted"|"modified"), "added", "removed"} (lines; null: binary).
    "files": ("changes",),
}

#: The format of a ``tool_call``: the server's name and the tool's, joined by a dot.
TOOL_CALL_FORMAT: Final = re.compile(r"[A-Za-z0-9_-]+\.[^\s]+")

TYPES: Final = tuple(FORMATS_BY_TYPE)

_KEYS: Final = frozenset({"role", "type", "format", "content", "start", "end"})


def _check_common(obj: object, what: str) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        raise MessageError(f"an LMC {what} must be an object, not {type(obj).__name__}")
    extra = set(obj) - _KEYS
    if extra:
        raise MessageError(f"unknown key(s) in LMC {what}: {', '.join(sorted(map(str, extra)))}")
    role = obj.get("role")
    if role not in ROLES:
        raise MessageError(f"unknown LMC role {role!r} (expected one of {', '.join(ROLES)})")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in FORMATS_BY_TYPE:
        raise MessageError(f"unknown LMC type {kind!r} (expected one of {', '.join(TYPES)})")
    fmt = obj.get("format")
    allowed = FORMATS_BY_TYPE[kind]
    if kind == "tool_call" and isinstance(fmt, str) and TOOL_CALL_FORMAT.fullmatch(fmt):
        return obj
    # A console start/end flag carries no format (as in the seed); everything else must match.
    if fmt not in allowed and not (fmt is None and (obj.get("start") or obj.get("end"))):
        shown = ", ".join(str(a) for a in allowed) or "SERVER.TOOL"
        raise MessageError(f"unknown format {fmt!r} for LMC type {kind!r} (expected {shown})")
    return obj


def _check_content(obj: Mapping[str, Any], what: str) -> None:
    content = obj.get("content")
    if obj["type"] == "confirmation":
        if not isinstance(content, Mapping) or not isinstance(content.get("content"), str):
            raise MessageError(f"an LMC confirmation {what} needs the code block as its content")
        return
    if obj["type"] == "files":
        _check_file_changes(content, what)
        return
    if obj.get("format") == "active_line":
        if content is not None and not isinstance(content, str):
            raise MessageError("an active_line chunk's content is a line number string or null")
        return
    if not isinstance(content, str):
        raise MessageError(f"an LMC {what}'s content must be a string")


def _check_file_changes(content: object, what: str) -> None:
    if not isinstance(content, list) or not all(
        isinstance(item, Mapping)
        and isinstance(item.get("path"), str)
        and item.get("change") in ("added", "deleted", "modified")
        for item in content
    ):
        raise MessageError(
            f"an LMC files {what}'s content is a list of {{path, change, added, removed}}"
        )


def validate_chunk(chunk: object) -> Chunk:
    """Return ``chunk`` if it is a well-formed LMC chunk, else raise :class:`MessageError`."""
    obj = _check_common(chunk, "chunk")
    for flag in ("start", "end"):
        if flag in obj and obj[flag] is not True:
            raise MessageError(f"the {flag!r} flag of an LMC chunk can only be true")
    if "content" in obj or not (obj.get("start") or obj.get("end")):
        _check_content(obj, "chunk")
    return dict(obj)


def validate_message(message: object) -> Message:
    """Return ``message`` if it is a well-formed merged LMC message, else raise."""
    obj = _check_common(message, "message")
    if "start" in obj or "end" in obj:
        raise MessageError("a stored LMC message carries no start/end flags")
    _check_content(obj, "message")
    return dict(obj)


def confirmation_chunk(language: str, code: str, kind: str = "code") -> Chunk:
    """The chunk a consumer sees before code runs (the seed's 'execution' confirmation).

    For an MCP tool call ``kind`` is ``tool_call``, ``language`` is ``SERVER.TOOL`` and
    ``code`` the arguments as JSON.
    """
    return {
        "role": "computer",
        "type": "confirmation",
        "format": "execution",
        "content": {"type": kind, "format": language, "content": code},
    }
