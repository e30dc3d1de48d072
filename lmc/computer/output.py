"""Making kernel output readable, and bounding what is kept of it for the model.

Two different consumers read a run's output. The person watching gets every chunk as it
comes (with ``\\r`` intact so a progress bar animates); :class:`TextCleaner` only removes what
no consumer can use (ANSI escapes, stray control bytes, lone surrogates left by undecodable
bytes). The model gets a stored copy that must stay small however much was printed:
:class:`BoundedOutput` keeps the head and the tail with the total size in the middle, folds
carriage-return progress bars into their final state, and holds at most about ``limit``
characters in memory however much output streams through it.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Final

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "BoundedOutput",
    "OutputEnds",
    "TextCleaner",
    "bound_output",
    "clean_text",
]

#: Characters of a run's output kept for the model by default (head and tail together).
DEFAULT_OUTPUT_LIMIT: Final = 20_000

_ESCAPE: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[()*+][0-~]"  # character set designations
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\x1b"  # a lone ESC
)
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # all but \t \n \r
_UNFINISHED_ESCAPE: Final = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*)?\Z")
# C1 controls (U+0080-U+009F: a terminal reads U+009B as CSI) and the CSI/OSC they start,
# and lone surrogates (replaced, not removed).
_C1: Final = re.compile(r"\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x9c\x1b]*(?:\x07|\x9c)|[\x80-\x9f]")
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
_MAX_CARRY: Final = 256


def clean_text(text: str) -> str:
    """Remove ANSI escapes and control characters (C1 too); replace lone surrogates with U+FFFD.

    Each pass runs only when a cheap test says it can change something, because hundreds
    of megabytes of plain output go through here.
    """
    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    if not text.isascii():
        text = _C1.sub("", text)  # before the C0 pass: a C1 OSC may end in BEL
        text = _SURROGATE.sub("\ufffd", text)
    if _CONTROL.search(text) is not None:
        text = _CONTROL.sub("", text)
    return text


class TextCleaner:
    """:func:`clean_text` for a stream whose escape sequences may be split across pieces."""

    def __init__(self) -> None:
        self._carry = ""

    def feed(self, text: str) -> str:
        """Clean ``text``, holding back an escape sequence it ends in the middle of."""
        text = self._carry + text
        self._carry = ""
        unfinished = _UNFINISHED_ESCAPE.search(text) if "\x1b" in text[-_MAX_CARRY:] else None
        if unfinished is not None and len(text) - unfinished.start() <= _MAX_CARRY:
            self._carry = text[unfinished.start() :]
            text = text[: unfinished.start()]
        return clean_text(text)

    def flush(self) -> str:
        """What is still held back (an escape sequence that never finished)."""
        text, self._carry = self._carry, ""
        return clean_text(text)


class _LineFolder:
    """Folds ``\\r`` rewrites of a line into the line's last state, across pieces.

    ``\\r\\n`` is a line end; a lone ``\\r`` starts the line over. A line that grows past
    ``max_line`` without ending is let through as it is, so memory stays bounded.
    """

    def __init__(self, max_line: int) -> None:
        self._max_line = max_line
        self._line = ""
        self._cr = False  # the previous piece ended in \r: the next character decides

    def feed(self, text: str) -> str:
        if self._cr:
            self._cr = False
            text = "\r" + text
        if text.endswith("\r"):
            self._cr = True
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        done = ""
        last_newline = text.rfind("\n")
        if last_newline >= 0:
            done = _fold_lines(self._line + text[: last_newline + 1])
            self._line = ""
            text = text[last_newline + 1 :]
        if "\r" in text:
            self._line = ""
            text = text[text.rfind("\r") + 1 :]
        self._line += text
        if len(self._line) > self._max_line:
            done += self._line
            self._line = ""
        return done

    def flush(self) -> str:
        line, self._line, self._cr = self._line, "", False
        return line


def _fold_lines(text: str) -> str:
    if "\r" not in text:
        return text
    return "\n".join(line[line.rfind("\r") + 1 :] for line in text.split("\n"))


class BoundedOutput:
    """Accumulates output for the model in at most about ``limit`` characters of memory.

    Feed it every output piece with :meth:`add`; :meth:`text` returns all of it when it fits,
    otherwise the first and last ``limit // 2`` characters with a line in the middle saying
    how much was left out of how much.
    """

    def __init__(self, limit: int = DEFAULT_OUTPUT_LIMIT) -> None:
        if limit < 2:
            raise ValueError("an output limit must be at least 2 characters")
        self.limit = limit
        self.total = 0
        self._half = limit // 2
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._folder = _LineFolder(max_line=limit)

    def add(self, text: str) -> None:
        """Add one piece of output."""
        self._store(self._folder.feed(text))

    def text(self) -> str:
        """The stored output: whole if it fitted, else head, size line, tail."""
        self._store(self._folder.flush())
        head = "".join(self._head)
        if self.total <= self.limit:
            return head + "".join(self._tail)
        tail = "".join(self._tail)[-(self.limit - self._half) :]
        left_out = self.total - len(head) - len(tail)
        return (
            f"{head}\n[... {left_out:,} characters left out; the output was {self.total:,} "
            f"characters, showing the first {len(head):,} and the last {len(tail):,} ...]\n"
            f"{tail}"
        )

    def _store(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        room = self._half - self._head_size
        if room > 0:
            self._head.append(text[:room])
            self._head_size += min(room, len(text))
            text = text[room:]
            if not text:
                return
        keep = self.limit - self._half
        if len(text) >= keep:
            self._tail.clear()
            self._tail.append(text[-keep:])
            self._tail_size = keep
            return
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail_size - len(self._tail[0]) >= keep:
            self._tail_size -= len(self._tail.popleft())


def bound_output(text: str, limit: int = DEFAULT_OUTPUT_LIMIT) -> str:
    """``text`` made readable (progress bars folded) and cut to head + tail if over ``limit``."""
    bounded = BoundedOutput(limit)
    bounded.add(text)
    return bounded.text()


class OutputEnds:
    """The first and last few KB of a run's output, in bounded memory."""

    SIZE: Final = 8192

    def __init__(self) -> None:
        self.head = ""
        self.tail = ""
        self.open_line = False

    def add(self, text: str) -> None:
        if not text:
            return
        self.open_line = not text.endswith("\n")
        if len(self.head) < self.SIZE:
            self.head += text[: self.SIZE - len(self.head)]
        self.tail = (self.tail + text[-self.SIZE :])[-self.SIZE :]

    def text(self) -> str:
        return self.head + "\n" + self.tail
