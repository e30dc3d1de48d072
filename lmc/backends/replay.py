"""Replay files: the assistant's completions, in order, forced through the real model.

Format (UTF-8 text): the completions written one after another, exactly as the model
emitted them, special tokens as their markers. Each completion ends with its stop marker,
``<|call|>`` or ``<|return|>``; one newline right after a stop marker is a separator and is
dropped, so a file may hold one completion per line::

    <|channel|>commentary to=python <|constrain|>code<|message|>print(1)<|call|>
    <|channel|>final<|message|>It printed 1.<|return|>

Each sampling call of the backend consumes the next completion; a logits processor leaves
only its next token, so llama.cpp's own sampler emits it at any temperature.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lmc.errors import BackendError, ConfigError
from lmc.harmony import tokens

__all__ = ["ReplayScript", "format_replay", "parse_replay"]

_STOP_RE: Final = re.compile("|".join(re.escape(m) for m in sorted(tokens.STOP_TOKENS)))


def parse_replay(text: str, *, source: str = "replay file") -> list[str]:
    """Split a replay file's text into completions; text after the last stop is an error."""
    completions: list[str] = []
    pos = 0
    for match in _STOP_RE.finditer(text):
        completions.append(text[pos : match.end()])
        pos = match.end()
        if text.startswith("\r\n", pos):
            pos += 2
        elif text.startswith("\n", pos):
            pos += 1
    rest = text[pos:]
    if rest.strip():
        raise ConfigError(
            f"{source}: the text after the last completion does not end in <|call|> or "
            f"<|return|>: {rest.strip()[:60]!r}"
        )
    if not completions:
        raise ConfigError(f"{source} holds no completion (each must end in <|call|> or <|return|>)")
    return completions


def format_replay(completions: Sequence[str]) -> str:
    """The replay file text for ``completions`` (the inverse of :func:`parse_replay`)."""
    for i, completion in enumerate(completions):
        stops = _STOP_RE.findall(completion)
        if len(stops) != 1 or not completion.endswith(stops[0]):
            raise ConfigError(
                f"completion {i + 1} must end in <|call|> or <|return|> and hold no other one"
            )
    return "".join(c + "\n" for c in completions)


class ReplayScript:
    """The completions of a replay file, handed out one per sampling call."""

    def __init__(self, completions: Sequence[str], *, source: str = "script") -> None:
        self._completions = list(completions)
        self._next = 0
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayScript:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read replay file {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"replay file {path} is not UTF-8 text") from exc
        return cls(parse_replay(text, source=str(path)), source=str(path))

    @property
    def remaining(self) -> int:
        return len(self._completions) - self._next

    def take(self) -> str:
        """The next completion; running out is a clear error."""
        if self._next >= len(self._completions):
            raise BackendError(
                f"the replay {self.source} has no completion left: all "
                f"{len(self._completions)} were used and the model was asked for another",
                hint="Record more completions, or stop the conversation where the recording ends.",
            )
        completion = self._completions[self._next]
        self._next += 1
        return completion
