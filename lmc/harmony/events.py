"""What the streaming Harmony parser reports: a closed set of small frozen events.

A message is reported as ``MessageStarted`` (its header is complete), any number of
``ContentDelta`` (its text, in the pieces it arrived in), then ``MessageEnded`` (with the
token that ended it). ``ParseProblem`` reports input the parser had to repair or skip; it
never stops parsing. Consumers match on the type, as with h11's events.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "ContentDelta",
    "Event",
    "Header",
    "MessageEnded",
    "MessageStarted",
    "ParseProblem",
    "Terminator",
]


class Terminator(StrEnum):
    """What ended a message: which one matters (call: run the tool; return: the turn is over)."""

    END = "end"  # <|end|>
    CALL = "call"  # <|call|>
    RETURN = "return"  # <|return|>
    END_OF_STREAM = "end_of_stream"  # no terminator: the stream (or the message) just stopped


@dataclass(frozen=True, slots=True)
class Header:
    """A message's header. A tool's message has role ``tool`` and the tool's name in ``name``."""

    role: str
    name: str | None = None
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None


@dataclass(frozen=True, slots=True)
class MessageStarted:
    """The header is complete (``<|message|>`` was seen); content follows."""

    header: Header


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A piece of the current message's text, never empty."""

    text: str


@dataclass(frozen=True, slots=True)
class MessageEnded:
    """The current message is over."""

    header: Header
    terminator: Terminator


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """Input the parser repaired or skipped (one line for a person); parsing carries on."""

    message: str


Event = MessageStarted | ContentDelta | MessageEnded | ParseProblem
