"""Folding long console output to its head and tail, so a runaway loop stays readable.

:class:`OutputWindow` is what a view keeps of a running block's output: the head and the
tail lines, each clipped, and a count of what lies between. It holds a few dozen lines
however much the code prints (100 MB of output costs lmc kilobytes, not gigabytes), and each
piece costs time in proportion to its own length, never to all the output so far.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["Folded", "OutputWindow", "fold_output"]

HEAD_LINES = 10
TAIL_LINES = 20
MAX_LINE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Folded:
    """The text to show and, when something was left out, where and how much."""

    head: str
    tail: str
    hidden_lines: int

    @property
    def note(self) -> str:
        return f"… {self.hidden_lines} more lines hidden …" if self.hidden_lines else ""

    def as_text(self) -> str:
        """Head, note and tail joined as plain text."""
        if not self.hidden_lines:
            return self.head
        return f"{self.head}\n{self.note}\n{self.tail}"


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… ({len(line) - MAX_LINE_CHARS} more characters)"


def fold_output(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> Folded:
    """Keep the first ``head`` and last ``tail`` lines of ``text``; clip very long lines."""
    lines = text.rstrip("\n").split("\n") if text else []
    if len(lines) <= head + tail + 1:
        return Folded("\n".join(_clip(line) for line in lines), "", 0)
    return Folded(
        "\n".join(_clip(line) for line in lines[:head]),
        "\n".join(_clip(line) for line in lines[-tail:]),
        len(lines) - head - tail,
    )


class OutputWindow:
    """The head and tail of a stream of output, in bounded memory (see the module's text).

    A carriage return starts its line over, as on a terminal: only what follows the last
    one is kept, so a progress bar costs one line.
    """

    def __init__(self, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> None:
        self.head_max, self.tail_max = head, tail
        self.head: list[str] = []  # the first complete lines
        self._rest: deque[str] = deque(maxlen=tail + 1)  # the last complete lines after them
        self._rest_count = 0  # complete lines after the head, kept or not
        self._line = ""  # the open line (clipped)
        self._cut = 0  # characters of the open line beyond the clip
        self._blank = 0  # blank lines not yet shown

    @property
    def empty(self) -> bool:
        return not (self.head or self._line or self._cut or self._blank)

    def add(self, text: str) -> None:
        """Take one piece of output: only the lines it can still show are looked at."""
        newlines = text.count("\n")
        if not newlines:
            self._extend(text)
            return
        start = 0
        whole = newlines  # complete lines this piece ends (the open one first)
        while whole and (len(self.head) < self.head_max or start == 0):
            end = text.index("\n", start)
            self._extend(text[start:end])
            self._complete()
            start, whole = end + 1, whole - 1
        last = text.rindex("\n")
        end = last  # the newline ending the last line that is not blank
        while end >= start and text[end - 1] in "\r\n":
            end -= 1
        end = text.index("\n", end) if end >= start else start - 1
        lines = text.count("\n", start, end + 1)
        keep = min(lines, self.tail_max + 1)
        cut = end
        for _ in range(keep):  # back to the newline before the first line kept
            cut = text.rindex("\n", start - 1, cut)
        if lines > keep:  # lines only counted: the blank ones before them too
            self._rest_count += lines - keep + self._blank
            self._blank = 0
        line_start = cut + 1
        for _ in range(keep):
            line_end = text.index("\n", line_start)
            self._extend(text[line_start:line_end])
            self._complete()
            line_start = line_end + 1
        self._blank += whole - lines
        self._extend(text[last + 1 :])

    def _extend(self, piece: str) -> None:
        if not piece:
            return
        over = piece.rfind("\r", 0, len(piece) - 1)
        if over >= 0 or self._line.endswith("\r"):  # the line starts over
            self._line, self._cut = "", 0
            piece = piece[over + 1 :]
        room = MAX_LINE_CHARS + 1 - len(self._line)  # one over, for a trailing \r
        self._line += piece[:room]
        self._cut += max(len(piece) - room, 0)

    def _complete(self) -> None:
        line = self._line[:-1] if self._line.endswith("\r") else self._line
        if self._cut or len(line) > MAX_LINE_CHARS:
            cut = self._cut + max(len(line) - MAX_LINE_CHARS, 0)
            line = f"{line[:MAX_LINE_CHARS]}… ({cut} more characters)"
        self._line, self._cut = "", 0
        if not line:  # shown only once something follows (trailing blank lines are not)
            self._blank += 1
            return
        blank, self._blank = self._blank, 0
        while blank and len(self.head) < self.head_max:
            self.head.append("")
            blank -= 1
        self._rest_count += max(blank - self.tail_max - 1, 0)
        for _ in range(min(blank, self.tail_max + 1)):
            self._add_line("")
        self._add_line(line)

    def _add_line(self, line: str) -> None:
        if len(self.head) < self.head_max:
            self.head.append(line)
        else:
            self._rest.append(line)
            self._rest_count += 1

    def folded(self) -> Folded:
        """What to show now: like :func:`fold_output` of all the output so far."""
        head, tail = list(self.head), list(self._rest)
        total = len(head) + self._rest_count
        if self._line or self._cut:
            line = self._line.removesuffix("\r")
            cut = self._cut + max(len(line) - MAX_LINE_CHARS, 0)
            if line or cut:
                blank = min(self._blank, self.head_max + self.tail_max + 2)
                tail.extend([""] * blank)
                tail.append(f"{line[:MAX_LINE_CHARS]}… ({cut} more characters)" if cut else line)
                total += self._blank + 1
        if total <= self.head_max + self.tail_max + 1:
            return Folded("\n".join(head + tail), "", 0)
        while len(head) < self.head_max and tail:
            head.append(tail.pop(0))
        tail = tail[-self.tail_max :]
        return Folded("\n".join(head), "\n".join(tail), total - len(head) - len(tail))
