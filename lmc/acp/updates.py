"""LMC chunks as ACP ``session/update`` payloads: the one mapping, live and on replay.

The final channel becomes ``agent_message_chunk``, the analysis channel
``agent_thought_chunk``, the person's words ``user_message_chunk`` (a replayed history, a heard
message) and lmc's own notes agent text. Every call the model makes becomes one tool call:
a code block (kind ``execute``, titled by its language, the code in its content) and any
``tool_call`` chunk (MCP, the browser, whatever tool comes next: kind from its name). It is
announced ``pending`` once written, ``in_progress`` when it runs (with its output as it
comes), and ends ``completed`` or ``failed`` (declined, cut short) with its output and the
files it changed as diffs. Nothing here talks to the client: :class:`Updates` only returns
the payloads, so replaying a stored conversation is feeding it the stored messages.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from lmc.agent.loop import STEP_LIMIT
from lmc.messages import Chunk, Message

__all__ = ["OUTPUT_SHOWN", "Updates", "fenced", "message_chunks", "tool_kind"]

Update = dict[str, Any]
#: The files chunk's content -> diff ToolCallContent (None: show the list as text).
DiffMaker = Callable[[object], list[dict[str, Any]] | None]

#: Characters of a call's output shown in its content (the end of it, where errors are).
OUTPUT_SHOWN: Final = 20_000
#: Seconds between two live updates of a running call's output.
_OUTPUT_EVERY: Final = 0.25
_TOKEN_LIMIT_NOTE: Final = "Stopped: the model reached the token limit"
_IMAGE_TYPES: Final = {
    "base64.png": "image/png",
    "base64.jpeg": "image/jpeg",
    "base64": "image/png",
}


def tool_kind(fmt: str) -> str:
    """ACP's kind for a tool call named ``fmt`` (``SERVER.TOOL``, ``browser.search``, ...)."""
    name = fmt.lower()
    if name.startswith("browser."):
        return "search" if name.endswith("search") else "fetch"
    if "patch" in name or name.endswith(("write_file", "edit_file")):
        return "edit"
    if name.endswith(("read_file", "read_text_file")):
        return "read"
    return "other"


def fenced(text: str, language: str = "") -> str:
    """``text`` as a Markdown code block whose fence no backtick run inside it closes."""
    longest = max((len(run) for run in _runs(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


def _runs(text: str) -> Iterator[str]:
    run = ""
    for char in text:
        if char == "`":
            run += char
        elif run:
            yield run
            run = ""
    if run:
        yield run


def _text(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def message_chunks(message: Message) -> list[Chunk]:
    """A stored message as the chunks that streamed it (start, content, end)."""
    head = {k: v for k, v in message.items() if k != "content"}
    return [{**head, "start": True}, message, {**head, "end": True}]  # type: ignore[list-item]


@dataclass
class _Call:
    """One tool call as it is announced, runs and ends."""

    id: str
    fmt: str
    code: bool  # a code block (else a tool call)
    text: str = ""
    announced: bool = False
    declined: bool = False
    running: bool = False
    ran: bool = False
    cut: bool = False  # the turn was cancelled while it was in hand
    output: list[str] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    shown_at: float = float("-inf")

    def title(self) -> str:
        if not self.code:
            return self.fmt
        line = next((s.strip() for s in self.text.splitlines() if s.strip()), "")
        line = line if len(line) <= 60 else line[:59] + "…"
        return f"{self.fmt}: {line}" if line else self.fmt

    def raw_input(self) -> Any:
        """The code and its language; a tool's JSON arguments; other text (a patch) as
        ``{"input": TEXT}``."""
        if self.code:
            return {"language": self.fmt, "code": self.text}
        try:
            arguments = json.loads(self.text or "{}")
        except ValueError:
            arguments = None
        return arguments if isinstance(arguments, dict) else {"input": self.text}

    def content(self) -> list[dict[str, Any]]:
        language = self.fmt if self.code else ("json" if self._json() else "")
        shown = [_text(fenced(self.text, language))]
        out = "".join(self.output)
        if out:
            if len(out) > OUTPUT_SHOWN:
                out = f"[… {len(out) - OUTPUT_SHOWN} characters before]\n" + out[-OUTPUT_SHOWN:]
            shown.append(_text(fenced(out)))
        return shown + self.extra

    def _json(self) -> bool:
        try:
            json.loads(self.text or "{}")
        except ValueError:
            return False
        return True

    def start(self) -> Update:
        self.announced = True
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": self.id,
            "title": self.title(),
            "kind": "execute" if self.code else tool_kind(self.fmt),
            "status": "pending",
            "content": self.content(),
            "rawInput": self.raw_input(),
        }

    def update(self, status: str) -> Update:
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": self.id,
            "status": status,
            "content": self.content(),
        }


class Updates:
    """Turns chunks into update payloads for one session (its calls' ids stay unique)."""

    def __init__(
        self,
        diffs: DiffMaker | None = None,
        ids: Iterator[int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._diffs = diffs
        self._ids = ids if ids is not None else itertools.count(1)
        self._clock = clock
        self.call: _Call | None = None
        #: lmc's last note of the turn (the step limit, the token limit, ...).
        self.last_note = ""

    # -- what the session asks -----------------------------------------------------------

    def current(self) -> dict[str, Any] | None:
        """The pending call as ACP's ToolCallUpdate (for session/request_permission)."""
        call = self.call
        if call is None:
            return None
        return {
            "toolCallId": call.id,
            "title": call.title(),
            "kind": "execute" if call.code else tool_kind(call.fmt),
            "status": "pending",
            "content": call.content(),
            "rawInput": call.raw_input(),
        }

    def declined(self) -> None:
        """The person said no to the pending call: it ends failed."""
        if self.call is not None:
            self.call.declined = True

    def cut_short(self) -> None:
        """The turn was cancelled (from another thread): the call in hand ends failed."""
        call = self.call
        if call is not None:
            call.cut = True

    def stop_reason(self, cancelled: bool) -> str:
        if cancelled:
            return "cancelled"
        if self.last_note.startswith(STEP_LIMIT):
            return "max_turn_requests"
        if self.last_note.startswith(_TOKEN_LIMIT_NOTE):
            return "max_tokens"
        return "end_turn"

    # -- chunks in, updates out ------------------------------------------------------------

    def feed(self, chunk: Chunk) -> list[Update]:
        kind, role = chunk["type"], chunk["role"]
        if kind in ("code", "tool_call") and role == "assistant":
            return self._call_chunk(chunk)
        if kind == "confirmation":
            return self._confirmation(chunk)
        if kind == "console":
            return self._console(chunk)
        if kind == "image" and role == "computer":
            return self._image(chunk)
        if kind == "files":
            return self._files(chunk)
        if kind in ("message", "reasoning"):
            return self._text(chunk)
        return []

    def finish(self, cancelled: bool = False) -> list[Update]:
        """The turn ended: the last call ends too (failed when the turn was cut short)."""
        call = self.call
        if call is not None and cancelled and not call.ran:
            call.declined = True
        return self._settle()

    def _settle(self) -> list[Update]:
        call, self.call = self.call, None
        if call is None:
            return []
        out = [] if call.announced else [call.start()]
        failed = call.declined or call.cut
        return [*out, call.update("failed" if failed else "completed")]

    def _text(self, chunk: Chunk) -> list[Update]:
        content = chunk.get("content")
        if not isinstance(content, str) or not content:
            return []
        role = chunk["role"]
        if role == "computer":  # lmc's note: shown as the agent's words, on a line of its own
            if chunk["type"] != "message":
                return []
            self.last_note = content
            text = f"\n\n_{content.strip()}_\n\n"
            return [_chunk("agent_message_chunk", text)]
        out = self._settle()
        if role == "user":
            return [*out, _chunk("user_message_chunk", content)]
        name = "agent_thought_chunk" if chunk["type"] == "reasoning" else "agent_message_chunk"
        return [*out, _chunk(name, content)]

    def _call_chunk(self, chunk: Chunk) -> list[Update]:
        out: list[Update] = []
        if chunk.get("start") or self.call is None or self.call.announced:
            out = self._settle()
            fmt = str(chunk.get("format") or "tool")
            self.call = _Call(f"call-{next(self._ids)}", fmt, code=chunk["type"] == "code")
        call = self.call
        content = chunk.get("content")
        if isinstance(content, str):
            call.text += content
        if chunk.get("end"):
            out.append(call.start())
        return out

    def _confirmation(self, chunk: Chunk) -> list[Update]:
        block = chunk.get("content")
        if not isinstance(block, dict):
            return []
        call = self.call
        if call is None or call.running or call.ran or call.fmt != block.get("format"):
            out = self._settle()
            fmt = str(block.get("format") or "tool")
            call = self.call = _Call(f"call-{next(self._ids)}", fmt, block.get("type") == "code")
            call.text = str(block.get("content") or "")
            return [*out, call.start()]
        return [] if call.announced else [call.start()]

    def _console(self, chunk: Chunk) -> list[Update]:
        call = self.call
        if call is None:
            return []
        if chunk.get("start"):
            if call.declined or call.running:
                return []
            call.running = True
            out = [] if call.announced else [call.start()]
            return [*out, call.update("in_progress")]
        if chunk.get("end"):
            call.running, call.ran = False, True
            return []
        content = chunk.get("content")
        if chunk.get("format") != "output" or not isinstance(content, str):
            return []
        call.output.append(content)
        now = self._clock()
        if call.declined or now - call.shown_at < _OUTPUT_EVERY:
            return []
        call.shown_at = now
        return [call.update("in_progress")]

    def _image(self, chunk: Chunk) -> list[Update]:
        call, content = self.call, chunk.get("content")
        if call is None or not isinstance(content, str):
            return []
        mime = _IMAGE_TYPES.get(str(chunk.get("format")))
        if mime is None:
            call.extra.append(_text(f"image: {content}"))
        else:
            image = {"type": "image", "data": content, "mimeType": mime}
            call.extra.append({"type": "content", "content": image})
        return []

    def _files(self, chunk: Chunk) -> list[Update]:
        content = chunk.get("content")
        if content is None:
            return []
        call = self.call
        diffs = self._diffs(content) if self._diffs is not None else None
        if diffs is None:
            diffs = [_text("Files changed:\n" + _file_lines(content))]
        if call is None:
            return []
        call.extra.extend(diffs)
        return self._settle()


def _file_lines(content: object) -> str:
    from lmc.workspace.changes import changes_from_content, describe_changes

    return "\n".join(describe_changes(changes_from_content(content)))


def _chunk(name: str, text: str) -> Update:
    return {"sessionUpdate": name, "content": {"type": "text", "text": text}}
