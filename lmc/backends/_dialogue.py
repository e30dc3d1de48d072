"""lmc's Harmony prompt, read back as the turns a chat server takes; its answer, as Harmony.

A chat-style server (Chat Completions, the Responses API, Ollama's ``/api/chat``) renders its
own template, so the transports for it cannot send lmc's rendered prompt. The Harmony prompt
stays the one source of truth: :func:`read_prompt` parses it back into neutral
:class:`Turn` values (the person's words, reasoning, answers, calls, results) that each
transport maps to its dialect, and :class:`HarmonyWriter` turns what the server streams back
(reasoning, answer text, a tool call) into the Harmony pieces and stop reasons the agent
loop already handles, so a call becomes the same code chunks as on the raw path.

Tools go out as JSON-Schema functions: ``python`` (gpt-oss's built-in tool, raw code in
Harmony) as ``python`` with one ``code`` argument, ``functions.X`` as ``X``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lmc.backends.base import FunctionSpec, Piece, StopReason
from lmc.harmony import tokens
from lmc.harmony.parser import StreamParser

__all__ = [
    "CODE_SCHEMA",
    "RAW_ARGUMENTS",
    "FunctionSpec",
    "HarmonyWriter",
    "Prompt",
    "Turn",
    "call_arguments",
    "call_key",
    "read_prompt",
]

Kind = Literal["user", "reasoning", "text", "call", "result"]

#: The arguments of the python function offered to chat servers.
CODE_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The code to run."}},
    "required": ["code"],
}
#: Functions whose Harmony argument is the raw text (a string parameter, as gpt-oss's
#: apply_patch is declared), offered to chat servers as an object with this one field (Codex's
#: ``{"input": ...}``); their calls come back as the raw text, as gpt-oss writes them.
RAW_ARGUMENTS: Final[Mapping[str, str]] = {"apply_patch": "input"}
_REASONING_RE: Final = re.compile(r"^Reasoning: (low|medium|high)$", re.MULTILINE)
_ZWSP_MARKER: Final = "<\u200b|"


@dataclass(slots=True)
class Turn:
    """One piece of the conversation in a dialect-neutral form.

    ``call``: ``name`` is the function (``python``, ``shell``, ``srv__tool``), ``text`` its
    JSON arguments, ``call_id`` an id (the server's when it gave one this session).
    ``result``: ``name`` the function answered for, ``call_id`` that of its call.
    """

    kind: Kind
    text: str
    name: str = ""
    call_id: str = ""


@dataclass(slots=True)
class Prompt:
    """A Harmony prompt read back: instructions, reasoning effort, and the turns."""

    instructions: str = ""
    effort: str | None = None
    turns: list[Turn] = field(default_factory=list)


def _unescape(text: str) -> str:
    """lmc writes markers inside text with a zero-width space; a chat server gets them plain."""
    return text.replace(_ZWSP_MARKER, "<|") if _ZWSP_MARKER in text else text


def _instructions(developer_text: str) -> str:
    """The ``# Instructions`` section of a rendered developer message (tools go separately)."""
    text = developer_text
    if text.startswith("# Instructions\n\n"):
        text = text[len("# Instructions\n\n") :]
        cut = text.find("\n\n# Tools\n\n")
        return text[:cut] if cut >= 0 else text
    cut = text.find("# Tools\n\n")
    return text[:cut].rstrip() if cut >= 0 else text


def function_name(recipient: str) -> str:
    """The chat function a Harmony recipient calls: ``python``, ``functions.shell`` -> shell,
    ``browser.search`` -> browser_search."""
    name = recipient.split(maxsplit=1)[0] if recipient.split() else recipient
    if name.startswith("functions."):
        return name.removeprefix("functions.")
    return name.replace(".", "_")


def call_arguments(name: str, text: str) -> str:
    """A call's JSON arguments: python's raw code becomes ``{"code": ...}``."""
    if name == "python":
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                if isinstance(json.loads(stripped), dict):
                    return stripped
            except ValueError:
                pass
        return json.dumps({"code": text}, ensure_ascii=False)
    if name in RAW_ARGUMENTS and not _is_object(text):
        return json.dumps({RAW_ARGUMENTS[name]: text}, ensure_ascii=False)
    return text.strip() or "{}"


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def call_key(name: str, arguments: str) -> tuple[str, str]:
    """How a call the server made is found again when the prompt is read back."""
    if name == "python":
        arguments = _python_code(arguments)
    elif name in RAW_ARGUMENTS:
        arguments = _field_text(arguments, (RAW_ARGUMENTS[name],))
    return name, call_arguments(name, arguments)


def read_prompt(
    prompt: str, known_ids: Mapping[tuple[str, str], str | Sequence[str]] | None = None
) -> Prompt:
    """The conversation in ``prompt`` (a rendered Harmony prompt ending in ``<|start|>assistant``).

    ``known_ids`` maps (function, arguments) of calls seen this session to the server's ids
    (several when the server made the same call more than once: the prompt's first such call
    gets the first id, and so on, the last id for any more); other calls get ids made from
    their position, the same each time the prompt is read.
    """
    parser = StreamParser(role=None)
    parser.feed_text(prompt)
    parser.finish()
    out = Prompt()
    pending: list[str] = []  # ids of calls not answered yet, oldest first
    seen: dict[tuple[str, str], int] = {}  # how often each known call came so far
    for index, message in enumerate(parser.messages):
        text = _unescape(message.text)
        if message.role == "system":
            found = _REASONING_RE.search(text)
            out.effort = found.group(1) if found else out.effort
        elif message.role == "developer":
            out.instructions = _instructions(text)
        elif message.role == "user":
            out.turns.append(Turn("user", text))
        elif message.role == "assistant" and message.recipient not in (None, "all"):
            name = function_name(message.recipient or "")
            arguments = call_arguments(name, text)
            call_id = _known_id(known_ids or {}, (name, arguments), seen) or f"call_{index}"
            pending.append(call_id)
            out.turns.append(Turn("call", arguments, name, call_id))
        elif message.role == "assistant":
            kind: Kind = "reasoning" if message.channel == "analysis" else "text"
            out.turns.append(Turn(kind, text))
        elif message.role == "tool":
            call_id = pending.pop(0) if pending else f"call_{index}"
            out.turns.append(Turn("result", text, function_name(message.name or ""), call_id))
    return out


def _known_id(
    known: Mapping[tuple[str, str], str | Sequence[str]],
    key: tuple[str, str],
    seen: dict[tuple[str, str], int],
) -> str | None:
    """The server's id for this occurrence of a call, if it gave one."""
    ids = known.get(key)
    if not ids:
        return None
    if isinstance(ids, str):
        return ids
    count = seen[key] = seen.get(key, 0) + 1
    return ids[min(count, len(ids)) - 1]


class HarmonyWriter:
    """What a chat server streams, written as the Harmony the model would have written.

    The prompt ended in ``<|start|>assistant``, so the first message needs only its channel;
    each later one starts with ``<|start|>assistant``. Reasoning goes to ``analysis``, answer
    text to ``final``, a call to ``commentary to=functions.X <|constrain|>json`` (python to
    ``analysis to=python code`` with its raw code), as gpt-oss writes them.
    """

    def __init__(self) -> None:
        self._started = False
        self._open: str | None = None  # the channel of the message being written
        self._blank = ""  # answer text that is only whitespace so far (held back)
        self.reasoning = ""
        self.text = ""

    def _header(self, channel: str, rest: str = "") -> Iterator[Piece]:
        yield from self._close()
        if self._started:
            yield Piece(tokens.START, special=True)
            yield Piece("assistant")
        self._started = True
        yield Piece(tokens.CHANNEL, special=True)
        yield Piece(channel + rest)

    def _close(self) -> Iterator[Piece]:
        if self._open is not None:
            self._open = None
            yield Piece(tokens.END, special=True)

    def _write(self, channel: str, text: str) -> Iterator[Piece]:
        if self._open != channel:
            yield from self._header(channel)
            yield Piece(tokens.MESSAGE, special=True)
            self._open = channel
        yield Piece(text)

    def reason(self, text: str) -> Iterator[Piece]:
        if text:
            self.reasoning += text
            yield from self._write("analysis", text)

    def answer(self, text: str) -> Iterator[Piece]:
        """Answer text; blank text before any (servers send "\n\n" ahead of a call) waits."""
        if not text:
            return
        if self._open != "final" and not (self._blank + text).strip():
            self._blank += text
            return
        text, self._blank = self._blank + text, ""
        self.text += text
        yield from self._write("final", text)

    def call(self, name: str, arguments: str, recipient: str | None = None) -> Iterator[Piece]:
        """A whole tool call, ending in ``<|call|>``; ``recipient`` for a built-in namespace's
        tool (``browser.search``), which gpt-oss calls on analysis with JSON arguments."""
        if recipient is not None:
            yield from self._header("analysis", f" to={recipient} code")
            yield Piece(tokens.MESSAGE, special=True)
            yield Piece(arguments)
        elif name == "python":
            yield from self._header("analysis", " to=python code")
            yield Piece(tokens.MESSAGE, special=True)
            yield Piece(_python_code(arguments))
        elif name in RAW_ARGUMENTS:
            yield from self._header("commentary", f" to=functions.{name}")
            yield Piece(tokens.MESSAGE, special=True)
            yield Piece(_field_text(arguments, (RAW_ARGUMENTS[name],)))
        else:
            yield from self._header("commentary", f" to=functions.{name} ")
            yield Piece(tokens.CONSTRAIN, special=True)
            yield Piece("json")
            yield Piece(tokens.MESSAGE, special=True)
            yield Piece(arguments)
        yield Piece(tokens.CALL, special=True)

    def finish(self, reason: StopReason) -> Iterator[Piece]:
        """The end of an answer without a call: a final answer ends in ``<|return|>``."""
        if reason is StopReason.RETURN and self._open == "final":
            self._open = None
            yield Piece(tokens.RETURN, special=True)
        elif reason is not StopReason.MAX_TOKENS:
            yield from self._close()


def _python_code(arguments: str) -> str:
    """The code of a python call (its ``code`` argument), or the arguments as they are."""
    return _field_text(arguments, ("code", "source", "script", "input"))


def _field_text(arguments: str, keys: Sequence[str]) -> str:
    """The first of these string fields of a JSON object, or the arguments as they are."""
    try:
        data = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(data, dict):
        for key in keys:
            if isinstance(data.get(key), str):
                return str(data[key])
    return arguments


def stop_after_answer(writer: HarmonyWriter, finish: str | None) -> StopReason:
    """The stop reason of an answer with no call, from the server's finish reason."""
    if finish == "length":
        return StopReason.MAX_TOKENS
    if writer.text:
        return StopReason.RETURN
    return StopReason.END_OF_STREAM


def tool_payload(functions: Sequence[FunctionSpec]) -> list[dict[str, Any]]:
    """Chat Completions' ``tools`` (Ollama's ``/api/chat`` takes the same)."""
    return [
        {
            "type": "function",
            "function": {
                "name": f.name,
                "description": f.description,
                "parameters": dict(f.parameters),
            },
        }
        for f in functions
    ]
