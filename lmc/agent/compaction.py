"""Compaction: near the context size, the model summarises the older turns and goes on with
the summary and the recent ones, instead of forgetting them.

The size is the real one (``backend.context_size``: the model's, the server's or
``--context``). When the next prompt and the answer's reserve no longer fit, lmc picks the
oldest messages to fold (keeping about half the room for the recent ones; within one long
turn its older steps fold too), sends the model a request of its own (a separate Harmony
conversation: "summarise this"), and records the summary as a message of the conversation,
with what it covers in the message's ``meta``. The stored conversation keeps everything; the
prompt becomes the system and developer messages, the summary (introduced as such, so the
model knows earlier turns were summarised), and the messages after the fold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from lmc.agent.history import Entry, Transcript, escape_markers, user_harmony
from lmc.errors import LmcError
from lmc.messages import Chunk, Message

if TYPE_CHECKING:
    from lmc.backends.base import Backend

__all__ = [
    "SUMMARY_INTRO",
    "Compactor",
    "SummaryState",
    "conversation_text",
    "latest_summary",
    "prompt_parts",
]

#: How the prompt introduces a summary to the model.
SUMMARY_INTRO: Final = (
    "[lmc] The earlier part of this conversation was summarised to fit your context window. "
    "The summary follows; the messages after it are complete. Continue the work from here."
)
_INSTRUCTIONS: Final = (
    "You summarise a conversation between a user and an AI assistant that runs code on the "
    "user's computer, so that the assistant can continue the work from the summary alone. "
    "Keep: the user's requests (the latest one word for word), decisions and preferences, "
    "files created or changed and their paths, commands that worked, errors and their fixes, "
    "results, and what remains to be done. Be concise and factual; no preamble."
)
_ASK: Final = "Summarise this conversation for the assistant to continue from:\n\n"
#: Characters of one run's output given to the summariser.
_OUTPUT_CHARS: Final = 1500


@dataclass(frozen=True, slots=True)
class SummaryState:
    """The latest summary: its entry, the entries it covers (``[0, covers)``), its text."""

    index: int
    covers: int
    text: str


def latest_summary(entries: Sequence[Entry]) -> SummaryState | None:
    for index in range(len(entries) - 1, -1, -1):
        meta = entries[index].meta
        if (
            meta
            and isinstance(meta.get("summary_of"), int)
            and isinstance(meta.get("summary"), str)
        ):
            return SummaryState(index, int(meta["summary_of"]), str(meta["summary"]))
    return None


def summary_harmony(text: str) -> str:
    return user_harmony(f"{SUMMARY_INTRO}\n\n{text}")


def prompt_parts(transcript: Transcript, prefix: str, dropped_turns: int, bound: Any) -> list[str]:
    """The prompt's pieces: with a summary, the messages it covers give way to it."""
    state = latest_summary(transcript.entries)
    if state is None:
        return transcript.prompt_parts(prefix, dropped_turns, bound)
    rest = Transcript(transcript.entries[state.covers :])
    return rest.prompt_parts(prefix + summary_harmony(state.text), dropped_turns, bound)


def _entry_text(message: Message) -> str:
    from lmc.computer.output import bound_output

    role, kind = message["role"], message["type"]
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    if role == "user":
        return f"User: {text}" if kind == "message" else f"User: [{kind}]"
    if kind == "reasoning":
        return ""
    if message["type"] == "code":
        return f"Assistant ran {message['format']}:\n{text}"
    if message["type"] == "tool_call":
        return f"Assistant called {message['format']}: {text}"
    if message["type"] == "files":
        from lmc.workspace.changes import changes_from_content, describe_changes

        lines = describe_changes(changes_from_content(message.get("content", [])))
        return "Files changed: " + "; ".join(lines)
    if role == "computer" and kind == "console":
        return f"Output:\n{bound_output(text, _OUTPUT_CHARS)}" if text.strip() else ""
    if role == "computer" and kind == "message":
        return f"lmc: {text}"
    if role == "assistant" and kind == "message":
        return f"Assistant: {text}"
    return f"[{kind}]"


def conversation_text(entries: Sequence[Entry], previous: str | None) -> str:
    """The messages to summarise as plain text (a previous summary first)."""
    parts = [f"Summary of what came before:\n{previous}"] if previous else []
    for entry in entries:
        if entry.meta and "summary_of" in entry.meta:
            continue
        text = _entry_text(entry.message)
        if text:
            parts.append(text)
    return "\n\n".join(parts)


def _split_point(transcript: Transcript, start: int, counts: list[int], keep: int) -> int | None:
    """Where the fold ends: the earliest message from which the rest takes at most ``keep``
    tokens, at a user or assistant message (a tool result stays with its call)."""
    entries = transcript.entries
    best: int | None = None
    total = 0
    for index in range(len(entries) - 1, start, -1):
        total += counts[index]
        if total > keep:
            break
        if entries[index].message["role"] != "computer" and counts[index]:
            best = index
    if best is None:
        # Not even the last step fits in half the room: fold all but the last call and result.
        for index in range(len(entries) - 1, start, -1):
            if entries[index].message["role"] != "computer" and counts[index]:
                return index
    return best


class Compactor:
    """Summarises older messages when the prompt no longer fits (or on demand)."""

    def __init__(self, loop: Any, live_names: Callable[[], str | None] | None = None) -> None:
        self._loop = loop
        #: The kernels' live names and types (lmc.computer.state.listing), added to the
        #: summary so that the model keeps working with what it made.
        self._live_names = live_names
        #: Tokens the summary may take (also the summary request's own answer reserve).
        self.summary_tokens = 1024

    def fit(
        self, backend: Backend, size: int, reserve: int, *, force: bool = False
    ) -> Generator[Chunk, None, bool]:
        """Compact when the prompt and ``reserve`` do not fit ``size``; True if it did."""
        loop = self._loop
        used = loop.prompt_tokens(backend)
        if not force and used + reserve <= size:
            return False
        transcript: Transcript = loop.transcript
        state = latest_summary(transcript.entries)
        start = state.covers if state is not None else 0
        texts = transcript.harmony_texts(loop._bound)
        counts = [backend.count_tokens(t) if t else 0 for t in texts]
        prefix = backend.count_tokens(loop._prefix())
        covers = _split_point(transcript, start, counts, max((size - reserve - prefix) // 2, 0))
        if covers is None or covers <= start:
            return False
        yield from loop.notice(
            f"The conversation takes {used:,} of the model's {size:,} tokens: lmc asks the "
            f"model, in a request of its own, to summarise messages {start + 1}-{covers}."
        )
        previous = state.text if state is not None else None
        text = conversation_text(transcript.entries[start:covers], previous)
        try:
            summary = self._summarise(backend, text, size)
        except LmcError as exc:
            summary, problem = None, str(exc)
        else:
            problem = "the model wrote no final answer"
        if not summary:
            yield from loop.notice(f"The summary failed ({problem}).")
            return False
        names = self._live_names() if self._live_names is not None else None
        if names:
            summary = f"{summary}\n\n{names}"
        note = (
            f"Summary of messages {start + 1}-{covers}, which the model now sees instead of "
            f"them (the conversation keeps them all):\n\n{summary}"
        )
        meta = {"summary_of": covers, "summary": summary}
        entry = Entry({"role": "computer", "type": "message", "content": note}, "", meta)
        transcript.entries.append(entry)
        loop._record_hook(entry)
        loop.dropped_turns = 0
        yield {"role": "computer", "type": "message", "start": True}
        yield {"role": "computer", "type": "message", "content": note}
        yield {"role": "computer", "type": "message", "end": True}
        return True

    def _summarise(self, backend: Backend, text: str, size: int) -> str | None:
        from lmc.backends.base import SamplingSettings
        from lmc.computer.output import bound_output
        from lmc.harmony import tokens
        from lmc.harmony.parser import parse_completion

        budget = min(self.summary_tokens, size // 4)
        prompt = _request(text)
        while backend.count_tokens(prompt) + budget > size and len(text) > 400:
            text = bound_output(text, int(len(text) * 0.7))
            prompt = _request(text)
        settings = SamplingSettings(
            max_tokens=budget, temperature=self._loop.settings.sampling.temperature
        )
        cancel = getattr(self._loop, "_cancel", None) or threading.Event()
        generation = backend.generate(prompt, settings, cancel)
        raw = "".join(piece.text for piece in generation)
        if not raw.endswith(tuple(tokens.STOP_TOKENS)):
            raw += tokens.END
        messages = parse_completion(raw, role="assistant")
        finals = [m.text for m in messages if m.channel == "final" and m.text.strip()]
        return finals[-1].strip() if finals else None


def _request(text: str) -> str:
    """The summary request: a Harmony conversation of its own."""
    from datetime import date

    from lmc.harmony.conversation import DeveloperContent, ReasoningEffort, SystemContent
    from lmc.harmony.render import render_conversation
    from lmc.harmony.types import Message as HarmonyMessage

    system = SystemContent(
        reasoning_effort=ReasoningEffort.LOW, conversation_start_date=date.today().isoformat()
    )  # no tools: the answer is the summary
    messages = [
        HarmonyMessage("system", [system]),
        HarmonyMessage("developer", [DeveloperContent(instructions=_INSTRUCTIONS)]),
        HarmonyMessage.from_text("user", escape_markers(_ASK + text)),
    ]
    return render_conversation(messages, next_role="assistant")
