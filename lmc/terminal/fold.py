"""Folding long console output to its head and tail, so a runaway loop stays readable."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Folded", "fold_output"]

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
