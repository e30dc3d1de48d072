"""The exact tokens in the model's context, so a re-rendered history reuses them.

A re-rendered conversation is text; tokenizing it again may split the assistant's words
differently from how the model sampled them (``"Hel" "lo"`` vs ``"Hello"``), and then the
KV cache no longer matches. The log remembers each token of the last prompt and completion
with its bytes; a new prompt reuses the logged ids for the longest part of it that matches,
cut at a boundary where tokenizing afresh cannot differ (right after a special token, or
right before one), and only the rest is tokenized. Appending and cutting cost in proportion to
the tokens appended or cut, so a long session's log stays cheap to keep.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

__all__ = ["TokenLog"]


def _common_prefix(a: bytes | bytearray, b: bytes) -> int:
    """Length of the common prefix of two byte strings.

    The usual case (a new prompt extends the last one) is one comparison; otherwise a binary
    search over slices.
    """
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class TokenLog:
    """Token ids with their bytes; ``special`` marks tokens that are Harmony markers."""

    def __init__(self, markers: Iterable[bytes]) -> None:
        self._markers = tuple(markers)
        self.ids: list[int] = []
        self._ends: list[int] = []  # byte offset where each token ends
        self._special_ends: list[int] = []
        self._special_index: list[int] = []  # token index of each special end
        self._data = bytearray()  # the logged tokens' bytes, grown and cut in place

    def clear(self) -> None:
        self.__init__(self._markers)  # type: ignore[misc]

    def append(self, token: int, data: bytes, *, special: bool) -> None:
        end = (self._ends[-1] if self._ends else 0) + len(data)
        self.ids.append(token)
        self._ends.append(end)
        self._data += data
        if special:
            self._special_ends.append(end)
            self._special_index.append(len(self.ids) - 1)

    def text(self) -> bytes:
        return bytes(self._data)

    def reusable(self, prompt: bytes) -> tuple[list[int], int]:
        """Logged ids that ``prompt`` starts with, and the byte offset where the rest begins."""
        if not self.ids:
            return [], 0
        common = _common_prefix(self._data, prompt)
        # Right before a special token: the rest starts with a marker, so it tokenizes alone.
        # (The common part may run into the marker: "<|return|>" and "<|end|>" share "<|".)
        i = bisect_right(self._ends, common) - 1
        if i >= 0:
            boundary = self._ends[i]
            if boundary == len(prompt) or prompt.startswith(self._markers, boundary):
                return self.ids[: i + 1], boundary
        # Otherwise right after the last special token inside the common part.
        j = bisect_right(self._special_ends, common) - 1
        if j < 0:
            return [], 0
        return self.ids[: self._special_index[j] + 1], self._special_ends[j]

    def truncate(self, n_tokens: int) -> None:
        """Keep the first ``n_tokens`` tokens."""
        del self.ids[n_tokens:], self._ends[n_tokens:]
        del self._data[self._ends[-1] if self._ends else 0 :]
        k = bisect_right(self._special_index, n_tokens - 1)
        del self._special_ends[k:], self._special_index[k:]
