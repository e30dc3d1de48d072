"""Reading one generation: the model's text, as it streams, into LMC chunks for the person
and finished messages (with the Harmony text each stands for) for the transcript.

A message is recorded as soon as it ends, so a turn stopped at any point leaves a consistent
transcript; how the generation ended (a call to run, a final answer, problems the parser met)
is kept in :class:`Outcome` for the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lmc.agent.run_output import PendingCall
from lmc.backends.base import StopReason
from lmc.harmony import tokens
from lmc.harmony.events import (
    ContentDelta,
    Event,
    Header,
    MessageEnded,
    MessageStarted,
    ParseProblem,
    Terminator,
)
from lmc.harmony.parser import StreamParser
from lmc.harmony.to_lmc import LmcMapper, chunk_base
from lmc.messages import Chunk, Message, MessageAssembler, with_text

__all__ = ["Outcome", "Sampler"]


@dataclass(slots=True)
class Outcome:
    """How one generation ended: the call it asks for, a final answer, why it stopped."""

    call: PendingCall | None = None
    returned: bool = False
    stop_reason: StopReason | None = None
    problems: list[str] = field(default_factory=list)


class Sampler:
    """One generation's parser, mapper and bookkeeping of raw text per message."""

    def __init__(self, record: Callable[[Message, str], int]) -> None:
        #: Records a finished message with its Harmony text; returns its transcript index.
        self._record = record
        self._parser = StreamParser("assistant")
        self._mapper = LmcMapper()
        # The prompt already opened the first message with <|start|>assistant.
        self._raw: list[str] = [tokens.START + "assistant"]
        self._pending = ""  # Harmony text of messages that showed nothing, for the next entry
        self._assembler = MessageAssembler()
        self._content: list[str] = []
        self.outcome = Outcome()

    def feed(self, text: str, special: bool) -> list[Chunk]:
        self._raw.append(text)
        return self._handle(self._parser.feed(text, special))

    def finish(self) -> list[Chunk]:
        chunks = self._handle(self._parser.finish())
        self._pending = ""  # text that never became a message is not shown to the model
        return chunks

    def abandon(self) -> None:
        """Stopped mid-generation: record the partial message, yield nothing."""
        try:
            self._handle(self._parser.finish())
        finally:
            self._pending = ""

    def _handle(self, events: list[Event]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for event in events:
            mapped = self._mapper.feed(event)
            for chunk in mapped:
                self._assembler.add(chunk)
            chunks.extend(mapped)
            if isinstance(event, MessageStarted):
                self._content = []
            elif isinstance(event, ContentDelta):
                self._content.append(event.text)
            elif isinstance(event, MessageEnded):
                self._ended(event.header, event.terminator)
            elif isinstance(event, ParseProblem):
                self.outcome.problems.append(event.message)
        return chunks

    def _ended(self, header: Header, terminator: Terminator) -> None:
        raw = "".join(self._raw)
        self._raw = []
        is_call = header.recipient is not None and header.recipient != "all"
        if terminator is Terminator.RETURN and raw.endswith(tokens.RETURN):
            raw = raw[: -len(tokens.RETURN)] + tokens.END  # stored as <|end|>, as Harmony asks
        elif terminator is Terminator.END_OF_STREAM:
            # Cut off: the model sees what it wrote, closed; a cut-off call is not shown.
            raw = "" if is_call else raw + tokens.END
        messages = self._assembler.messages
        self._assembler = MessageAssembler()
        base = chunk_base(header)
        if not messages and base is not None:
            messages = [with_text(base, "")]
        harmony = self._pending + raw
        first = None
        for message in messages:
            index = self._record(message, harmony)
            harmony = ""
            first = index if first is None else first
        self._pending = harmony
        if terminator is Terminator.CALL and is_call:
            self.outcome.call = PendingCall(header, "".join(self._content), first, self._pending)
            self._pending = ""
        elif terminator is Terminator.CALL:
            self.outcome.problems.append("a message ended in <|call|> without naming a tool")
        elif terminator is Terminator.RETURN or (
            terminator is Terminator.END and header.channel == "final"
        ):
            self.outcome.returned = True  # a final answer, even if junk follows it
