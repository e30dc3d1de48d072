"""Harmony events to LMC chunks, sans-IO: what a person (or an LMC consumer) sees stream by.

Each assistant message becomes a start chunk, content chunks as the pieces arrive, and an
end chunk, in the shapes of Open Interpreter's streaming response:

- ``analysis`` without a recipient: type ``reasoning`` (chain-of-thought, never ``message``);
- ``commentary`` without a recipient (a preamble for the user), ``final``, or no channel
  (a headerless answer): type ``message``;
- a message to the python tool or to a function whose name is a language lmc runs
  (``python``, ``functions.shell``, ``shell``, ...): type ``code`` with that language as its
  format. JSON arguments (content type ``json``, or content that opens with ``{``, whatever
  the recipient) have their ``code`` field decoded as it streams, so code still arrives piece
  by piece; content that is not a JSON object with a code field is the code itself.

- a message to a function named ``SERVER__TOOL`` (an MCP tool, named as Codex names them):
  type ``tool_call`` with format ``SERVER.TOOL``, its JSON arguments streamed as written.

Calls to the browser show as ``tool_call`` chunks like MCP tools'. Messages to other
recipients (unknown tools) and messages from other roles
give no chunks: the agent loop reports unknown tools and produces tool output itself.
"""

from __future__ import annotations

from enum import Enum

from lmc.harmony.events import (
    ContentDelta,
    Event,
    Header,
    MessageEnded,
    MessageStarted,
    Terminator,
)
from lmc.harmony.json_string import JsonFieldStreamer
from lmc.harmony.parser import StreamParser
from lmc.harmony.types import ASSISTANT
from lmc.messages import Chunk, CodeFormat, TextChunk, flag_of, is_code_format, with_text

__all__ = [
    "APPLY_PATCH",
    "BROWSER_CALLS",
    "TOOL_SEPARATOR",
    "LmcMapper",
    "call_code",
    "chunk_base",
    "chunk_kind",
    "completion_to_chunks",
    "tool_call_format",
    "tool_language",
]

_FUNCTIONS = "functions."

#: gpt-oss's built-in browser functions, shown as tool calls under their own name.
BROWSER_CALLS = frozenset({"browser.search", "browser.open", "browser.find"})

#: lmc's own functions that are not code (lmc.agent.job_tool), shown as tool calls of
#: format ``lmc.NAME``, as if lmc were one more tool server.
LMC_FUNCTIONS = frozenset({"functions.jobs"})

#: Between the server's and the tool's name in an MCP tool's function name.
TOOL_SEPARATOR = "__"
#: gpt-oss's apply_patch tool (lmc.agent.patch_tool): its calls show as tool_call chunks of
#: this format, the patch as their content.
APPLY_PATCH = "apply_patch"


def tool_language(recipient: str | None) -> CodeFormat | None:
    """The language a recipient runs, or None: ``python``, ``functions.shell`` -> ``shell``.

    A content type glued to the recipient (``python code``) is ignored.
    """
    if not recipient:
        return None
    words = recipient.split()
    if not words:
        return None
    name = words[0].lower()
    name = name.removeprefix(_FUNCTIONS)
    return name if is_code_format(name) else None


def tool_call_format(recipient: str | None) -> str | None:
    """``SERVER.TOOL`` for a call to ``functions.SERVER__TOOL`` (an MCP tool), the recipient
    itself for gpt-oss's browser (``browser.search``, ``browser.open``, ``browser.find``),
    ``apply_patch`` for ``functions.apply_patch``, else None."""
    if not recipient:
        return None
    words = recipient.split()
    name = words[0] if words else ""
    if name in BROWSER_CALLS:
        return name
    if name in (APPLY_PATCH, _FUNCTIONS + APPLY_PATCH):  # models drop the namespace at times
        return APPLY_PATCH
    if name in LMC_FUNCTIONS:
        return "lmc." + name.removeprefix(_FUNCTIONS)
    if not name.startswith(_FUNCTIONS):
        return None
    server, separator, tool = name[len(_FUNCTIONS) :].partition(TOOL_SEPARATOR)
    if not (server and separator and tool):
        return None
    return f"{server}.{tool}"


def chunk_base(header: Header) -> TextChunk | None:
    """The role, type and format of the chunks a message with this header shows, or None
    when it shows nothing."""
    if header.role != ASSISTANT:
        return None
    if header.recipient is not None and header.recipient != "all":
        language = tool_language(header.recipient)
        if language is not None:
            return {"role": "assistant", "type": "code", "format": language}
        call = tool_call_format(header.recipient)
        return {"role": "assistant", "type": "tool_call", "format": call} if call else None
    if header.channel == "analysis":
        return {"role": "assistant", "type": "reasoning"}
    return {"role": "assistant", "type": "message"}


def chunk_kind(header: Header) -> tuple[str, str | None] | None:
    """(LMC type, format) for a message with this header, or None when it shows nothing."""
    base = chunk_base(header)
    if base is None:
        return None
    if base["type"] == "code" or base["type"] == "tool_call":
        return (base["type"], base["format"])
    return (base["type"], None)


class _Arguments(Enum):
    RAW = "raw"  # the content is the code itself
    JSON = "json"  # the content is JSON arguments: stream the code field
    UNDECIDED = "undecided"  # a function's content: JSON if it opens with "{"


class LmcMapper:
    """Feed parser events, get LMC chunk dicts back (fresh dicts, the caller may keep them)."""

    def __init__(self) -> None:
        self._base: TextChunk | None = None  # role/type/format of the message being shown
        self._mode = _Arguments.RAW
        self._fields: JsonFieldStreamer | None = None
        self._raw: list[str] = []  # JSON arguments as written, for when no code field is found
        self._undecided: list[str] = []

    def feed(self, event: Event) -> list[Chunk]:
        """Map one event to the chunks it produces (often exactly one, sometimes none)."""
        if type(event) is ContentDelta:
            if self._base is None:
                return []
            if self._mode is _Arguments.RAW:
                return [with_text(self._base, event.text)]
            return self._arguments(event.text)
        if isinstance(event, MessageStarted):
            return self._start(event.header)
        if isinstance(event, MessageEnded):
            return self._end()
        return []

    def _start(self, header: Header) -> list[Chunk]:
        self._base = base = chunk_base(header)
        if base is None:
            return []
        self._mode = _Arguments.RAW
        self._fields = None
        self._raw = []
        self._undecided = []
        if base["type"] == "code":
            # Every call form is read the same way (python or functions.python, shell or
            # functions.shell, any content type): a JSON object's code field, else the text.
            # What is shown here is what is stored and what runs (the loop runs this text).
            content_type = (header.content_type or "").lower()
            if "json" in content_type:
                self._mode = _Arguments.JSON
                self._fields = JsonFieldStreamer()
            else:
                self._mode = _Arguments.UNDECIDED
        return [flag_of(base, "start")]

    def _arguments(self, text: str) -> list[Chunk]:
        assert self._base is not None
        if self._mode is _Arguments.UNDECIDED:
            self._undecided.append(text)
            stripped = text.lstrip()
            if not stripped:
                return []
            held = "".join(self._undecided)
            self._undecided = []
            if stripped[0] == "{":
                self._mode = _Arguments.JSON
                self._fields = JsonFieldStreamer()
            else:
                self._mode = _Arguments.RAW
                return [with_text(self._base, held)]
            text = held
        assert self._fields is not None
        code = self._fields.feed(text)
        if not self._fields.found:
            self._raw.append(text)
            if self._fields.failed:  # not JSON after all: the content is the code
                self._mode = _Arguments.RAW
                return [with_text(self._base, "".join(self._raw))]
        return [with_text(self._base, code)] if code else []

    def _end(self) -> list[Chunk]:
        base = self._base
        if base is None:
            return []
        self._base = None
        chunks: list[Chunk] = []
        if self._mode is _Arguments.UNDECIDED and self._undecided:
            chunks.append(with_text(base, "".join(self._undecided)))
        elif self._mode is _Arguments.JSON and self._fields is not None:
            if self._fields.found:
                rest = self._fields.finish()
                if rest:
                    chunks.append(with_text(base, rest))
            elif self._raw:  # no code field: show the arguments as they were written
                chunks.append(with_text(base, "".join(self._raw)))
        chunks.append(flag_of(base, "end"))
        return chunks


def completion_to_chunks(text: str, role: str | None = ASSISTANT) -> list[Chunk]:
    """Parse a whole completion (markers written inside the text) into LMC chunks."""
    parser = StreamParser(role)
    mapper = LmcMapper()
    chunks: list[Chunk] = []
    for event in [*parser.feed_text(text), *parser.finish()]:
        chunks.extend(mapper.feed(event))
    return chunks


def call_code(text: str, content_type: str | None = None, language: str = "python") -> str:
    """The code a call's content carries, exactly as :class:`LmcMapper` shows it.

    The code field of a JSON object (``{"code": "..."}``), else the text itself, for every
    recipient and content type.
    """
    mapper = LmcMapper()
    header = Header(ASSISTANT, None, "commentary", f"functions.{language}", content_type)
    chunks = [
        *mapper.feed(MessageStarted(header)),
        *mapper.feed(ContentDelta(text)),
        *mapper.feed(MessageEnded(header, Terminator.CALL)),
    ]
    return "".join(str(c["content"]) for c in chunks if "content" in c)
