"""The LMC vocabulary (roles, types, formats) and validation of chunks and messages.

Chunks and messages are plain dicts, exactly as Open Interpreter's streaming response shows
them, so that they serialise to JSON as they are and any consumer can read them without lmc.
A *chunk* is one streamed piece (it may carry only a ``start`` or ``end`` flag); a *message*
is what chunks merge into (see :mod:`lmc.messages.assemble`). Their static types are the
TypedDicts of :mod:`lmc.messages.types`; the validators here are the one place where a value
from outside becomes one of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeGuard, cast

from lmc.errors import MessageError
from lmc.messages.types import (
    AUDIO_FORMATS,
    CHANGE_KINDS,
    CODE_FORMATS,
    CONSOLE_FORMATS,
    IMAGE_FORMATS,
    ROLES,
    Block,
    Chunk,
    CodeFormat,
    ConfirmationChunk,
    Message,
    TextChunk,
)

__all__ = [
    "CODE_FORMATS",
    "FORMATS_BY_TYPE",
    "ROLES",
    "TOOL_CALL_FORMAT",
    "TYPES",
    "Chunk",
    "Message",
    "confirmation_chunk",
    "flag_of",
    "is_code_format",
    "text_of",
    "validate_chunk",
    "validate_message",
    "with_text",
    "without_flags",
]

#: Which formats each type allows. ``None`` means the type carries no format. Each type has
#: its TypedDict in :mod:`lmc.messages.types` (a test keeps the two in step).
#: ``reasoning`` is lmc's own type for chain-of-thought (the analysis channel), kept apart from
#: ``message`` so a consumer that shows every message never shows reasoning by accident.
FORMATS_BY_TYPE: Final[Mapping[str, tuple[str | None, ...]]] = {
    "message": (None,),
    "reasoning": (None,),
    "console": CONSOLE_FORMATS,
    "image": IMAGE_FORMATS,
    "code": CODE_FORMATS,
    "audio": AUDIO_FORMATS,
    "confirmation": ("execution",),
    # lmc's extension: a call to an MCP tool; its format is "SERVER.TOOL" (see TOOL_CALL_FORMAT),
    # or "apply_patch" (gpt-oss's patch tool: the content is the V4A patch).
    "tool_call": ("apply_patch",),
    # lmc's extension: the files a code block changed, as a list of
    # {"path", "change" ("added"|"deleted"|"modified"), "added", "removed"} (lines; null: binary).
    "files": ("changes",),
    # lmc's extension: a block handed back as a background job, as
    # {"job", "language", "command", "after" (seconds), "input" (it takes stdin)}.
    "job": ("handed_back",),
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
    flag = obj.get("start") or obj.get("end")
    if fmt not in allowed and not (fmt is None and flag and kind == "console"):
        shown = ", ".join(str(a) for a in allowed) or "SERVER.TOOL"
        raise MessageError(f"unknown format {fmt!r} for LMC type {kind!r} (expected {shown})")
    return obj


def _check_content(obj: Mapping[str, Any], what: str) -> None:
    content = obj.get("content")
    if obj["type"] == "confirmation":
        if not _is_block(content):
            raise MessageError(f"an LMC confirmation {what} needs the code block as its content")
        return
    if obj["type"] == "files":
        _check_file_changes(content, what)
        return
    if obj["type"] == "job":
        _check_handed_back(content, what)
        return
    if obj.get("format") == "active_line":
        if content is not None and not isinstance(content, str):
            raise MessageError("an active_line chunk's content is a line number string or null")
        return
    if not isinstance(content, str):
        raise MessageError(f"an LMC {what}'s content must be a string")


def _is_block(content: object) -> bool:
    """``{"type": "code", "format": LANGUAGE, ...}`` or ``{"type": "tool_call", ...}``."""
    if not isinstance(content, Mapping) or set(content) != {"type", "format", "content"}:
        return False
    kind, fmt = content["type"], content["format"]
    return (
        isinstance(content["content"], str)
        and isinstance(fmt, str)
        and ((kind == "code" and fmt in CODE_FORMATS) or kind == "tool_call")
    )


def _is_line_count(value: object) -> bool:
    """A count of lines (0 or more), or None for a binary file; never a bool or a float."""
    return value is None or (type(value) is int and value >= 0)


def _check_file_changes(content: object, what: str) -> None:
    if not isinstance(content, list) or not all(
        isinstance(item, Mapping)
        and set(item) == {"path", "change", "added", "removed"}
        and isinstance(item["path"], str)
        and item["change"] in CHANGE_KINDS
        and _is_line_count(item["added"])
        and _is_line_count(item["removed"])
        for item in content
    ):
        raise MessageError(
            f"an LMC files {what}'s content is a list of {{path, change, added, removed}}"
        )


def _check_handed_back(content: object, what: str) -> None:
    if not (
        isinstance(content, Mapping)
        and set(content) == {"job", "language", "command", "after", "input"}
        and type(content["job"]) is int
        and isinstance(content["language"], str)
        and isinstance(content["command"], str)
        and type(content["after"]) in (int, float)
        and type(content["input"]) is bool
    ):
        raise MessageError(
            f"an LMC job {what}'s content is {{job, language, command, after, input}}"
        )


def validate_chunk(chunk: object) -> Chunk:
    """Return ``chunk`` if it is a well-formed LMC chunk, else raise :class:`MessageError`."""
    obj = _check_common(chunk, "chunk")
    for flag in ("start", "end"):
        if flag in obj and obj[flag] is not True:
            raise MessageError(f"the {flag!r} flag of an LMC chunk can only be true")
    if "content" in obj or not (obj.get("start") or obj.get("end")):
        _check_content(obj, "chunk")
    # The checks above are exactly what the TypedDicts of lmc.messages.types declare.
    return cast(Chunk, dict(obj))


def validate_message(message: object) -> Message:
    """Return ``message`` if it is a well-formed merged LMC message, else raise."""
    obj = _check_common(message, "message")
    if "start" in obj or "end" in obj:
        raise MessageError("a stored LMC message carries no start/end flags")
    _check_content(obj, "message")
    return cast(Message, dict(obj))


def is_code_format(name: object) -> TypeGuard[CodeFormat]:
    """Whether ``name`` is one of the languages lmc runs."""
    return name in CODE_FORMATS


def confirmation_chunk(block: Block) -> ConfirmationChunk:
    """The chunk a consumer sees before code runs (the seed's 'execution' confirmation).

    For an MCP tool call the block's type is ``tool_call``, its format ``SERVER.TOOL`` and its
    content the arguments as JSON.
    """
    return {"role": "computer", "type": "confirmation", "format": "execution", "content": block}


def flag_of(chunk: Chunk, flag: Literal["start", "end"]) -> Chunk:
    """The ``start`` or ``end`` flag chunk of the message ``chunk`` belongs to."""
    out: dict[str, Any] = {k: v for k, v in chunk.items() if k in ("role", "type", "format")}
    out[flag] = True
    return cast(Chunk, out)  # the same role, type and format: the same shape


def without_flags(chunk: Chunk) -> Message:
    """``chunk`` as a message: its role, type, format (unless None) and content, in that
    order (as stored and sent, whatever order the chunk had), less ``start``/``end``."""
    present: dict[str, object] = dict(chunk.items())
    out = {k: present[k] for k in ("role", "type", "format", "content") if k in present}
    if "format" in out and out["format"] is None:
        del out["format"]
    return cast(Message, out)  # the flags are optional in every shape


def with_text(base: TextChunk, text: str) -> TextChunk:
    """A copy of ``base`` (role, type, format) carrying ``text`` as its content."""
    chunk = base.copy()
    chunk["content"] = text
    return chunk


def text_of(chunk: Mapping[str, object]) -> str:
    """The chunk's content when it is text, else "" (a flag, an active line's None, a
    confirmation's block, a list of changed files)."""
    content = chunk.get("content")
    return content if isinstance(content, str) else ""
