"""A sans-IO streaming parser for Harmony completions: pieces in, events out.

Theory of operation
-------------------
The parser is fed what a model emits: text pieces (``str``, or ``bytes`` that may end inside
a UTF-8 character) and special tokens as their markers (``feed(marker, special=True)``), or
text with the markers written inside it (``feed_text``, which also joins a marker split
across calls). Every call returns the events it completed; nothing is buffered that could
already be reported, except a partial UTF-8 character or a partial marker.

It is always in one of three states::

    BETWEEN --<|start|>--------------------------> HEADER (explicit: the author comes first)
    BETWEEN --<|channel|>, <|constrain|>----------> HEADER (implicit assistant: <|start|> missing)
    HEADER  --<|message|>--> MessageStarted ------> CONTENT
    HEADER  --text that cannot be a header (*)----> CONTENT (a headerless answer)
    CONTENT --text--> ContentDelta ---------------> CONTENT
    CONTENT --<|channel|>, <|constrain|>, <|message|>--> ContentDelta (the marker as text)
    CONTENT --<|start|>--> MessageEnded (cut off) -> HEADER (a ParseProblem says so)
    CONTENT --<|end|>, <|call|>, <|return|>-------> BETWEEN (MessageEnded with that terminator)

A parser made with a role (the prompt ended in ``<|start|>assistant``) starts in an implicit
HEADER for that role; one made with ``role=None`` starts in BETWEEN. ``finish()`` ends a
message still open with ``Terminator.END_OF_STREAM``.

Real-model quirks accepted silently (see RULES.md): a header that runs straight into its
text and is cut by a terminator or the end of the stream (``<|channel|>finalHello!``: the
final message ``Hello!``, when the channel name is glued to the text and nothing else is in
the header); ``to=X`` anywhere in the header; a
missing space before ``<|constrain|>``; ``json`` without ``<|constrain|>``; tool calls on any
channel; a stray ``<|channel|>commentary`` (the last channel named wins, and a header that is
only a channel may be cut short by ``<|start|>``); and (*) a refusal written with no header at
all. That last one is decided like this: right after ``<|start|>assistant`` only a marker or
`` to=...`` can follow, so text that starts with anything else, or a header that meets a
terminator or the end of the stream before any marker, is the content of an assistant
message with no channel (the LMC mapping shows it as a plain message).

A header marker met inside a message's text (the model quoting a header, real gpt-oss
output does) is text of that message: only ``<|start|>`` or the start of the completion
begins a message, so a quoted ``to=...`` never becomes a tool call.

Everything else that is wrong (a stray terminator, a message cut by ``<|start|>``, text
outside a message, an oversized header) is reported as a ``ParseProblem`` and parsing goes
on. Only misuse of the API raises, and only :class:`lmc.errors.HarmonyError`.

Per piece the work is proportional to the piece: content is never re-scanned, and the header
(which is short) is parsed once, when ``<|message|>`` arrives (:mod:`lmc.harmony.header_words`
says what its words mean).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from enum import Enum
from typing import Final

from lmc.errors import HarmonyError
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
from lmc.harmony.header_words import RECIPIENT_PREFIX, author_header, read_header
from lmc.harmony.types import ASSISTANT, Message, TextContent

__all__ = ["StreamParser", "parse_completion", "split_markers"]

#: Longer markers first so that the alternation never stops at a shorter one.
_MARKER_RE: Final = re.compile(
    "|".join(re.escape(m) for m in sorted(tokens.SPECIAL_TOKENS, key=len, reverse=True))
)
_LONGEST_MARKER: Final = max(len(m) for m in tokens.SPECIAL_TOKENS)
_MARKER_PREFIXES: Final = frozenset(m[:k] for m in tokens.SPECIAL_TOKENS for k in range(1, len(m)))
_TERMINATORS: Final = {
    tokens.END: Terminator.END,
    tokens.CALL: Terminator.CALL,
    tokens.RETURN: Terminator.RETURN,
}
#: A header longer than this is garbage: text beyond the limit (per run between markers)
#: and markers beyond the count are dropped, so a runaway header costs bounded memory.
MAX_HEADER_CHARS: Final = 1024
MAX_HEADER_MARKERS: Final = 32
#: A channel name with its message's text glued on (no space, no ``<|message|>``).
_GLUED_RE: Final = re.compile(r"(analysis|commentary|final)(?=[^\s<])(.+)\Z", re.DOTALL)


class _State(Enum):
    BETWEEN = "between"
    HEADER = "header"
    CONTENT = "content"
    FINISHED = "finished"


def split_markers(text: str) -> Iterator[tuple[str, bool]]:
    """Split text into ``(text, False)`` runs and ``(marker, True)`` special tokens."""
    pos = 0
    for match in _MARKER_RE.finditer(text):
        if match.start() > pos:
            yield text[pos : match.start()], False
        yield match.group(), True
        pos = match.end()
    if pos < len(text):
        yield text[pos:], False


class StreamParser:
    """Feed pieces of a completion; get :mod:`lmc.harmony.events` back.

    ``role`` is the role whose header the prompt already opened (``"assistant"`` when it
    ended in ``<|start|>assistant``), or None when the text starts with ``<|start|>``.
    Completed messages collect in :attr:`messages`.
    """

    def __init__(self, role: str | None = ASSISTANT) -> None:
        if role is not None and (not isinstance(role, str) or not role or role != role.strip()):
            raise HarmonyError(f"invalid starting role {role!r}: a word like 'assistant', or None")
        self.messages: list[Message] = []
        self._role = role
        self._implicit_role = role or ASSISTANT
        self._out: list[Event] = []
        self._utf8: codecs.IncrementalDecoder | None = None
        self._utf8_pending = False  # the decoder holds the start of a character
        self._carry = ""  # a marker begun at the end of a feed_text() piece
        self._state = _State.BETWEEN
        # The header being read.
        self._implicit = False
        self._parts: list[tuple[str, bool]] = []
        self._header_chars = 0
        self._header_markers = 0
        self._header_has_marker = False
        self._lead = ""  # the first non-blank characters of an implicit header's text
        self._overflow_reported = False
        # The message being read.
        self._header: Header | None = None
        self._content: list[str] = []
        self._stray_text_reported = False
        if role is not None:
            self._begin_header(implicit=True)

    # ----------------------------------------------------------------- public interface

    def feed(self, piece: str | bytes, special: bool = False) -> list[Event]:
        """Feed one piece: text (``str`` or UTF-8 ``bytes``), or one marker if ``special``."""
        if (
            self._state is _State.CONTENT
            and not special
            and type(piece) is str
            and not self._carry
            and not self._utf8_pending
        ):  # the common case, kept short: a piece of a message's text
            if not piece:
                return []
            self._content.append(piece)
            return [ContentDelta(piece)]
        self._check_open()
        self._flush_carry()
        if special:
            self._flush_utf8()
            marker = _as_str(piece)
            if marker in tokens.SPECIAL_TOKENS:
                self._marker(marker)
            else:
                self._problem(f"unknown special token {marker[:40]!r} skipped")
        elif isinstance(piece, bytes | bytearray):
            if self._utf8 is None:
                self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
            text = self._utf8.decode(piece)
            self._utf8_pending = bool(self._utf8.getstate()[0])
            self._text(text)
        elif isinstance(piece, str):
            self._flush_utf8()
            self._text(piece)
        else:
            raise HarmonyError(f"a piece must be str or bytes, not {type(piece).__name__}")
        return self._take()

    def feed_text(self, text: str) -> list[Event]:
        """Feed text with the markers written inside it; a marker may be split across calls."""
        self._check_open()
        if not isinstance(text, str):
            raise HarmonyError(f"feed_text() takes str, not {type(text).__name__}")
        self._flush_utf8()
        buffer = self._carry + text if self._carry else text
        self._carry = ""
        if "<" in buffer:
            pos = 0
            for match in _MARKER_RE.finditer(buffer):
                if match.start() > pos:
                    self._text(buffer[pos : match.start()])
                self._marker(match.group())
                pos = match.end()
            tail = buffer[pos:]
            for j in range(max(0, len(tail) - _LONGEST_MARKER + 1), len(tail)):
                if tail[j] == "<" and tail[j:] in _MARKER_PREFIXES:
                    self._carry = tail[j:]
                    tail = tail[:j]
                    break
            self._text(tail)
        else:
            self._text(buffer)
        return self._take()

    def finish(self) -> list[Event]:
        """The stream is over: flush what waits and end an open message."""
        if self._state is _State.FINISHED:
            return []
        self._flush_carry()
        self._flush_utf8()
        if self._state is _State.HEADER:
            self._header_cut(Terminator.END_OF_STREAM)
        elif self._state is _State.CONTENT:
            self._end_message(Terminator.END_OF_STREAM)
        self._state = _State.FINISHED
        return self._take()

    # ------------------------------------------------------------------------ plumbing

    def _check_open(self) -> None:
        if self._state is _State.FINISHED:
            raise HarmonyError("the parser was already finished; make a new one")

    def _take(self) -> list[Event]:
        out, self._out = self._out, []
        return out

    def _problem(self, message: str) -> None:
        self._out.append(ParseProblem(message))

    def _flush_carry(self) -> None:
        if self._carry:
            carry, self._carry = self._carry, ""
            self._text(carry)

    def _flush_utf8(self) -> None:
        if self._utf8_pending and self._utf8 is not None:
            self._utf8_pending = False
            rest = self._utf8.decode(b"", final=True)
            self._utf8.reset()
            if rest:
                self._text(rest)

    # ------------------------------------------------------------------ the transitions

    def _text(self, text: str) -> None:
        if not text:
            return
        if self._state is _State.CONTENT:
            self._content.append(text)
            self._out.append(ContentDelta(text))
        elif self._state is _State.HEADER:
            self._header_text(text)
        elif not text.isspace():  # BETWEEN: blank text between messages is harmless
            if not self._stray_text_reported:
                self._problem("text outside a message (expected <|start|>) read as a header")
                self._stray_text_reported = True
            self._begin_header(implicit=False)
            self._header_text(text.lstrip())

    def _marker(self, marker: str) -> None:
        if marker == tokens.STARTOFTEXT:
            return
        if self._state is _State.CONTENT:
            self._content_marker(marker)
        elif self._state is _State.HEADER:
            self._header_marker(marker)
        else:
            self._between_marker(marker)

    def _between_marker(self, marker: str) -> None:
        if marker == tokens.START:
            self._begin_header(implicit=False)
        elif marker in (tokens.CHANNEL, tokens.CONSTRAIN, tokens.MESSAGE):
            # <|start|>assistant left out: read the header as the assistant's.
            if marker == tokens.MESSAGE:
                self._problem("<|message|> without a header: read as the assistant's")
            self._begin_header(implicit=True, role=ASSISTANT)
            self._header_marker(marker)
        elif marker != tokens.ENDOFTEXT:
            self._problem(f"stray {marker} outside a message skipped")

    def _header_marker(self, marker: str) -> None:
        if marker == tokens.MESSAGE:
            self._start_message(self._parse_header())
        elif marker in (tokens.CHANNEL, tokens.CONSTRAIN):
            self._header_has_marker = True
            if self._header_markers < MAX_HEADER_MARKERS:
                self._header_markers += 1
                self._parts.append((marker, True))
                self._header_chars = 0  # each run of header text has its own limit
            elif not self._overflow_reported:
                self._problem("message header too long: its rest is dropped")
                self._overflow_reported = True
        elif marker == tokens.START:
            if self._parts and not self._only_channel():
                self._problem("message header cut short by <|start|>; dropped")
            self._begin_header(implicit=False)
        elif marker == tokens.ENDOFTEXT:
            self._header_cut(Terminator.END_OF_STREAM)
        else:
            self._header_cut(_TERMINATORS[marker])

    def _content_marker(self, marker: str) -> None:
        if marker in _TERMINATORS:
            self._end_message(_TERMINATORS[marker])
        elif marker == tokens.ENDOFTEXT:
            self._end_message(Terminator.END_OF_STREAM)
        elif marker == tokens.START:
            self._problem("message not ended before <|start|>")
            self._end_message(Terminator.END_OF_STREAM)
            self._begin_header(implicit=False)
        else:
            # <|channel|>, <|constrain|>, <|message|>: the model quoting a header (say its own
            # prompt) inside its text. Kept as text, as openai-harmony does: a new message,
            # and so a tool call, starts only at <|start|> or at the start of the completion.
            self._content.append(marker)
            self._out.append(ContentDelta(marker))

    # --------------------------------------------------------------------------- header

    def _begin_header(self, *, implicit: bool, role: str | None = None) -> None:
        self._state = _State.HEADER
        self._implicit = implicit
        self._implicit_role = role or self._role or ASSISTANT
        self._parts = []
        self._header_chars = 0
        self._header_markers = 0
        self._header_has_marker = False
        self._lead = ""
        self._overflow_reported = False

    def _header_text(self, text: str) -> None:
        headerless_candidate = self._implicit and not self._header_has_marker
        room = MAX_HEADER_CHARS - self._header_chars
        if self._header_markers >= MAX_HEADER_MARKERS:
            room = 0
        if len(text) > room:
            if headerless_candidate:  # far too long for a header: it is an answer
                self._parts.append((text, False))
                self._start_headerless()
                return
            if not self._overflow_reported:
                self._problem("message header too long: its rest is dropped")
                self._overflow_reported = True
            text = text[:room]
            if not text:
                return
        self._parts.append((text, False))
        self._header_chars += len(text)
        if headerless_candidate and len(self._lead) < len(RECIPIENT_PREFIX):
            self._lead += text.lstrip() if not self._lead else text
            lead = self._lead[: len(RECIPIENT_PREFIX)]
            if lead and not RECIPIENT_PREFIX.startswith(lead):
                self._start_headerless()

    def _only_channel(self) -> bool:
        """Whether the header so far is ``<|channel|>word`` alone (the stray-channel quirk)."""
        words = [w for t, m in self._parts if not m for w in t.split()]
        return [m for m, special in self._parts if special] == [tokens.CHANNEL] and len(words) <= 1

    def _header_cut(self, terminator: Terminator) -> None:
        """A terminator (or the end) came before ``<|message|>``."""
        if self._implicit and not self._header_has_marker:
            text = "".join(t for t, _ in self._parts)
            if text and not text.isspace():
                self._start_headerless()
                self._end_message(terminator)
                return
            if terminator is not Terminator.END_OF_STREAM:
                self._problem(f"empty message ended by {_marker_name(terminator)} skipped")
        elif self._glued_header(terminator):
            return
        else:
            raw = "".join(t for t, _ in self._parts)[:120]
            self._problem(
                f"message header ended by {_marker_name(terminator)} before <|message|>; "
                f"dropped: {raw!r}"
            )
        self._state = _State.BETWEEN
        self._stray_text_reported = False

    def _glued_header(self, terminator: Terminator) -> bool:
        """``<|channel|>finalHello!`` then a terminator or the end: a header that ran straight
        into its text without ``<|message|>`` (llama.cpp forks, SGLang, MLX). When the text
        glued to the channel name is all there is, it is that channel's message."""
        markers = [i for i, (_, special) in enumerate(self._parts) if special]
        if len(markers) != 1 or self._parts[markers[0]][0] != tokens.CHANNEL:
            return False
        before = "".join(t for t, _ in self._parts[: markers[0]]).split()
        glued = _GLUED_RE.match("".join(t for t, _ in self._parts[markers[0] + 1 :]))
        if glued is None or glued.group(2).startswith(RECIPIENT_PREFIX):
            return False
        if len(before) > (0 if self._implicit else 1):
            return False
        if before and before[0].startswith(RECIPIENT_PREFIX):
            return False
        role, name = author_header(before[0] if before else self._implicit_role)
        self._start_message(Header(role, name, glued.group(1)))
        self._text(glued.group(2))
        self._end_message(terminator)
        return True

    def _start_headerless(self) -> None:
        role, name = author_header(self._implicit_role)
        text = "".join(t for t, _ in self._parts)
        self._start_message(Header(role, name))
        self._text(text)

    def _parse_header(self) -> Header:
        header, authorless = read_header(
            self._parts, self._implicit_role if self._implicit else None
        )
        if authorless:
            self._problem("message header without an author: read as the assistant's")
        return header

    # -------------------------------------------------------------------------- content

    def _start_message(self, header: Header) -> None:
        self._header = header
        self._content = []
        self._state = _State.CONTENT
        self._out.append(MessageStarted(header))

    def _end_message(self, terminator: Terminator) -> None:
        header = self._header
        assert header is not None
        self.messages.append(
            Message(
                header.role,
                [TextContent("".join(self._content))],
                header.name,
                header.channel,
                header.recipient,
                header.content_type,
            )
        )
        self._content = []
        self._header = None
        self._state = _State.BETWEEN
        self._stray_text_reported = False
        self._out.append(MessageEnded(header, terminator))


def _as_str(piece: str | bytes) -> str:
    if isinstance(piece, bytes | bytearray):
        return bytes(piece).decode("utf-8", "replace")
    if isinstance(piece, str):
        return piece
    raise HarmonyError(f"a piece must be str or bytes, not {type(piece).__name__}")


def _marker_name(terminator: Terminator) -> str:
    for marker, value in _TERMINATORS.items():
        if value is terminator:
            return marker
    return "the end of the stream"


def parse_completion(text: str, role: str | None = ASSISTANT) -> list[Message]:
    """Parse a whole completion (markers written inside the text) into messages."""
    parser = StreamParser(role)
    parser.feed_text(text)
    parser.finish()
    return parser.messages
