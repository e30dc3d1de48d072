"""The conversation as both the person and the model see it.

The person's view is the list of merged LMC messages. The model's view is Harmony text. Each
:class:`Entry` holds one LMC message and the exact Harmony text it adds to the prompt: for the
model's own messages that is the text as the model wrote it (header word order, channel,
content type, JSON spacing), so a re-rendered prompt matches what is already in the model's
KV cache token for token and only new tokens are evaluated. ``""`` adds nothing (a note for
the person only); ``None`` means unknown (messages loaded from LMC JSON), and the text is
derived from the LMC message by :func:`derive_harmony`.

A *turn* is a user message and everything after it up to the next one. The prompt leaves out
the chain-of-thought (``reasoning``) of earlier turns that ended in a final answer, and may
leave out the oldest turns to fit the context (the loop decides how many).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lmc.harmony import tokens
from lmc.harmony.render import render_message
from lmc.harmony.to_lmc import APPLY_PATCH
from lmc.harmony.tokens import CHANNEL, START
from lmc.harmony.types import Message as HarmonyMessage
from lmc.messages import Message, console_output

__all__ = [
    "CUT_OFF",
    "Entry",
    "Transcript",
    "assistant_call_harmony",
    "derive_harmony",
    "escape_markers",
    "result_for_dangling_call",
    "tool_call_harmony",
    "tool_result_harmony",
    "tool_result_text",
    "user_harmony",
]

_FINAL_HEADER = CHANNEL + "final"


@dataclass(slots=True)
class Entry:
    """One merged LMC message and the Harmony text it contributes to the prompt."""

    message: Message
    harmony: str | None = None
    #: lmc's own facts about the message (stored with it), e.g. what a summary covers.
    meta: dict[str, Any] | None = None


def escape_markers(text: str) -> str:
    """Text from the person or from code output, with Harmony's markers made inert.

    The prompt is tokenized with special tokens parsed, so a literal ``<|end|>`` printed by
    code would otherwise end the message early. A zero-width space after ``<`` keeps the text
    readable and keeps it text.
    """
    if "<|" not in text:
        return text
    for marker in tokens.SPECIAL_TOKENS:
        text = text.replace(marker, "<\u200b" + marker[1:])
    return text


def user_harmony(text: str) -> str:
    return render_message(HarmonyMessage.from_text("user", escape_markers(text)))


def tool_result_harmony(author: str, channel: str, text: str) -> str:
    """``<|start|>{author} to=assistant<|channel|>{channel}<|message|>{text}<|end|>``."""
    message = HarmonyMessage.from_text(
        "tool", escape_markers(text), name=author, recipient="assistant", channel=channel
    )
    return render_message(message)


def assistant_call_harmony(language: str, code: str) -> str:
    """How a call would be written, for messages that were not written by the model here."""
    code = escape_markers(code)
    if language == "python":
        message = HarmonyMessage.from_text(
            "assistant", code, recipient="python", channel="analysis", content_type="code"
        )
    else:
        message = HarmonyMessage.from_text(
            "assistant",
            json.dumps({"code": code}, ensure_ascii=False),
            recipient=f"functions.{language}",
            channel="commentary",
            content_type="<|constrain|>json",
        )
    return render_message(message)


def tool_call_recipient(fmt: str) -> str:
    """Who a tool_call chunk of this format was written to: ``functions.SERVER__TOOL`` for the
    MCP tool ``SERVER.TOOL``, ``functions.apply_patch`` for a patch."""
    if fmt == APPLY_PATCH:
        return f"functions.{fmt}"
    server, _, tool = fmt.partition(".")
    return f"functions.{server}__{tool}"


def tool_call_harmony(fmt: str, arguments: str) -> str:
    """How a call to the MCP tool ``SERVER.TOOL`` would be written (``functions.SERVER__TOOL``);
    a patch (its argument a string, as gpt-oss's reference declares it) as the raw text."""
    raw = fmt == APPLY_PATCH and not arguments.lstrip().startswith("{")
    message = HarmonyMessage.from_text(
        "assistant",
        escape_markers(arguments),
        recipient=tool_call_recipient(fmt),
        channel="commentary",
        content_type=None if raw else "<|constrain|>json",
    )
    return render_message(message)


def tool_result_text(messages: Sequence[Message]) -> str:
    """What the model reads of a run's computer messages (before bounding)."""
    parts: list[str] = []
    for message in messages:
        if message["type"] == "console" and message.get("format") == "output":
            parts.append(message.get("content") or "")
        elif message["type"] == "message":
            parts.append(message.get("content", "") + "\n")
        elif message["type"] == "image":
            parts.append("\n[an image was shown to the user]\n")
        elif message["type"] == "code" and message["format"] == "html":
            parts.append("\n[HTML was shown to the user]\n")
    return "".join(parts)


def derive_harmony(
    messages: Sequence[Message], bound: Callable[[str], str] = lambda text: text
) -> list[str]:
    """Harmony text for LMC messages that have none (LMC JSON from elsewhere).

    Calls are written the way :func:`assistant_call_harmony` does; the computer messages after
    a call become one tool message (on the last of them, bounded by ``bound``); an assistant
    message is a final answer unless code follows it in the same turn (then a preamble).
    """
    out = [""] * len(messages)
    call: tuple[int, str, str] | None = None  # (index of the call, its author and channel)
    results: list[int] = []

    def close_call() -> None:
        nonlocal call, results
        if call is None:
            return
        index, author, channel = call
        if results:
            text = tool_result_text([messages[i] for i in results]) or "(no output)"
            out[results[-1]] = tool_result_harmony(author, channel, bound(text))
        else:
            out[index] += tool_result_harmony(author, channel, "(the code was not run)")
        call, results = None, []

    for index, message in enumerate(messages):
        role, kind = message["role"], message["type"]
        raw_content = message.get("content")
        content = raw_content if isinstance(raw_content, str) else ""
        if role == "computer":
            if call is not None:
                results.append(index)
            continue
        close_call()
        if role == "user":
            text = "[an image]" if kind == "image" else content
            out[index] = user_harmony(text)
        elif kind == "reasoning":
            out[index] = render_message(
                HarmonyMessage.from_text("assistant", escape_markers(content), channel="analysis")
            )
        elif kind == "message":
            channel = "commentary" if _code_follows(messages, index) else "final"
            out[index] = render_message(
                HarmonyMessage.from_text("assistant", escape_markers(content), channel=channel)
            )
        elif message["type"] == "code":
            language = message["format"]
            out[index] = assistant_call_harmony(language, content)
            author = "python" if language == "python" else f"functions.{language}"
            call = (index, author, "analysis" if language == "python" else "commentary")
        elif kind == "tool_call":
            fmt = str(message.get("format"))
            out[index] = tool_call_harmony(fmt, content)
            call = (index, tool_call_recipient(fmt), "commentary")
    close_call()
    return out


def _code_follows(messages: Sequence[Message], index: int) -> bool:
    for message in messages[index + 1 :]:
        if message["role"] == "user":
            return False
        if message["role"] == "assistant" and message["type"] in ("code", "tool_call"):
            return True
    return False


CUT_OFF = "The run was cut off: lmc stopped before it finished."


def result_for_dangling_call(entries: Sequence[Entry]) -> Entry | None:
    """The note that closes a call left without a result (lmc was killed while it ran).

    Without it a resumed prompt would show the model a call with no answer.
    """
    if not entries:
        return None
    last = entries[-1]
    if last.message["role"] != "assistant" or last.message["type"] not in ("code", "tool_call"):
        return None
    note = console_output(CUT_OFF + "\n")
    if last.harmony is None:
        return Entry(note, None)  # derived along with the call
    if not last.harmony:
        return Entry(note, "")  # the call itself is not in the prompt
    from lmc.agent.tools import resolve_call
    from lmc.harmony.parser import parse_completion

    parsed = parse_completion(last.harmony, role=None)
    call = parsed[-1] if parsed else None
    if call is None or not call.recipient:
        return Entry(note, "")
    target = resolve_call(call.recipient, call.channel)
    return Entry(note, tool_result_harmony(target.author, target.channel, CUT_OFF))


class Transcript:
    """The entries of one conversation, and the prompt they render to."""

    def __init__(self, entries: Sequence[Entry] = ()) -> None:
        self.entries: list[Entry] = list(entries)

    @property
    def messages(self) -> list[Message]:
        return [entry.message for entry in self.entries]

    def turn_starts(self) -> list[int]:
        """Index of the first entry of each turn (entries before any user message: turn 0)."""
        starts = [i for i, e in enumerate(self.entries) if e.message["role"] == "user"]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        return starts

    def turn_count(self) -> int:
        return len(self.turn_starts()) if self.entries else 0

    def last_user_index(self) -> int | None:
        for index in range(len(self.entries) - 1, -1, -1):
            if self.entries[index].message["role"] == "user":
                return index
        return None

    def harmony_texts(self, bound: Callable[[str], str] = lambda text: text) -> list[str]:
        """Every entry's Harmony text, deriving the unknown ones."""
        if all(entry.harmony is not None for entry in self.entries):
            return [entry.harmony or "" for entry in self.entries]
        derived = derive_harmony(self.messages, bound)
        return [
            entry.harmony if entry.harmony is not None else derived[i]
            for i, entry in enumerate(self.entries)
        ]

    def render(
        self,
        prefix: str,
        dropped_turns: int = 0,
        bound: Callable[[str], str] = lambda text: text,
    ) -> str:
        """The prompt: ``prefix`` (system and developer), the turns from ``dropped_turns`` on
        (the current turn is always kept), and ``<|start|>assistant``."""
        return "".join(self.prompt_parts(prefix, dropped_turns, bound))

    def prompt_parts(
        self,
        prefix: str,
        dropped_turns: int = 0,
        bound: Callable[[str], str] = lambda text: text,
    ) -> list[str]:
        """The pieces :meth:`render` joins, each whole messages (so each starts with a
        special token, and their token counts add up to the prompt's)."""
        texts = self.harmony_texts(bound)
        starts = self.turn_starts() if self.entries else []
        bounds = [*starts, len(self.entries)]
        first = min(dropped_turns, max(len(starts) - 1, 0))
        parts = [prefix]
        for turn in range(first, len(starts)):
            lo, hi = bounds[turn], bounds[turn + 1]
            is_current = turn == len(starts) - 1
            drop_reasoning = not is_current and any(_FINAL_HEADER in t for t in texts[lo:hi])
            for index in range(lo, hi):
                if drop_reasoning and self.entries[index].message["type"] == "reasoning":
                    continue
                parts.append(texts[index])
        parts.append(START + "assistant")
        return parts
