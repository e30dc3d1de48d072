"""Turning model output into :class:`Piece` values: UTF-8 hold-back and marker splitting.

Two small sans-IO helpers, one per kind of source: llama.cpp hands out token bytes (a
character may be split across tokens), a server hands out text with the special-token
markers written inside it (a marker may be split across events).
"""

from __future__ import annotations

import codecs
from typing import Final

from lmc.backends.base import Piece
from lmc.harmony import tokens
from lmc.harmony.parser import split_markers

__all__ = ["MarkerSplitter", "Utf8Pieces"]

_LONGEST_MARKER: Final = max(len(m) for m in tokens.SPECIAL_TOKENS)
_MARKER_PREFIXES: Final = frozenset(m[:k] for m in tokens.SPECIAL_TOKENS for k in range(1, len(m)))


class Utf8Pieces:
    """Token bytes in, pieces out; bytes of a character split across tokens wait for the rest."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def text(self, data: bytes) -> Piece | None:
        """The text piece for one token's bytes, or None while a character is incomplete."""
        text = self._decoder.decode(data)
        return Piece(text) if text else None

    def texts(self, data: bytes) -> list[Piece]:
        """:meth:`text` as a list: empty while a character is incomplete."""
        piece = self.text(data)
        return [] if piece is None else [piece]

    def special(self, marker: str) -> list[Piece]:
        """A special token: an unfinished character before it is flushed (as U+FFFD)."""
        out = self.flush()
        out.append(Piece(marker, special=True))
        return out

    def flush(self) -> list[Piece]:
        """End of output: whatever waits comes out."""
        text = self._decoder.decode(b"", final=True)
        self._decoder.reset()
        return [Piece(text)] if text else []


class MarkerSplitter:
    """Server text in, pieces out; a marker split across events is joined before it is cut."""

    def __init__(self) -> None:
        self._carry = ""

    def feed(self, text: str) -> list[Piece]:
        buffer = self._carry + text
        self._carry = ""
        start = max(0, len(buffer) - _LONGEST_MARKER + 1)
        for j in range(start, len(buffer)):
            if buffer[j] == "<" and buffer[j:] in _MARKER_PREFIXES:
                self._carry = buffer[j:]
                buffer = buffer[:j]
                break
        return [Piece(part, special) for part, special in split_markers(buffer)]

    def flush(self) -> list[Piece]:
        carry, self._carry = self._carry, ""
        return [Piece(carry)] if carry else []
