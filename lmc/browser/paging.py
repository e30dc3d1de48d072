"""Where a view of a page ends: the line the reference's token limit falls in.

OpenAI's reference browser (openai/gpt-oss ``gpt_oss/tools/simple_browser/
simple_browser_tool.py``, ``get_end_loc``; the same in the ``gpt-oss`` 0.0.9 package) numbers
the lines from the view's first one onwards, tokenizes that text (cut after
``(view_tokens + 1) * longest token`` characters), finds where token number ``view_tokens``
starts by adding up the tokens' decoded lengths, and shows every line up to the one that
position falls in. A text of at most ``view_tokens`` characters, or of at most
``view_tokens`` tokens, is shown to its end.

Two ways to measure, both written here from that description:

- :class:`TokenLengths` (each token's decoded length): the reference's own arithmetic, so
  views end on the same line whatever the text. A token that holds part of a multi-byte
  character decodes to a replacement character, so the sum can run ahead of the text; the
  reference cuts where the sum says, and so does this.
- a token counter (all a server backend offers): the fewest lines from the view's start whose
  text, with the newline after the last one, holds more than ``view_tokens`` tokens. No token
  of o200k's pre-tokenizer spans a newline followed by the next ``L{n}:``, so the tokens of
  that text are the ones that start in those lines: the same line as the reference whenever
  every token before the cut decodes whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lmc.browser.page import join_lines

__all__ = ["LONGEST_TOKEN", "TokenLengths", "view_end"]

#: The most characters one token decodes to (o200k's longest, as the reference computes it).
LONGEST_TOKEN: Final = 128


@dataclass(frozen=True, slots=True)
class TokenLengths:
    """A tokenizer as the reference uses it: each token's decoded length (None where it
    cannot tell: the view is then counted), and the longest a token decodes to."""

    lengths: Callable[[str], list[int] | None]
    longest: int = LONGEST_TOKEN


def _end_by_lengths(text: str, view_tokens: int, lengths: list[int]) -> int | None:
    """Lines of ``text`` the view shows, or None for all of them."""
    if len(lengths) <= view_tokens:
        return None
    return text[: sum(lengths[:view_tokens])].count("\n") + 1


def _end_by_count(
    lines: list[str], loc: int, view_tokens: int, count_tokens: Callable[[str], int]
) -> int | None:
    """The same line from a counter, by bisection over the lines that the reference's
    character cut reaches (a few counts per view)."""
    total = len(lines)

    def over(count: int) -> bool:
        shown = join_lines(lines[loc : loc + count], numbered=True, offset=loc)
        return count_tokens(shown + ("\n" if loc + count < total else "")) > view_tokens

    budget, most = (view_tokens + 1) * LONGEST_TOKEN, 0
    while loc + most < total and budget > 0:
        budget -= len(f"L{loc + most}: {lines[loc + most]}\n")
        most += 1
    if not over(most):
        return None
    low, high = 1, most  # over(high)
    while low < high:
        middle = (low + high) // 2
        if over(middle):
            high = middle
        else:
            low = middle + 1
    return low


def view_end(
    lines: list[str],
    loc: int,
    num_lines: int,
    view_tokens: int,
    *,
    count_tokens: Callable[[str], int],
    token_lengths: TokenLengths | None = None,
) -> int:
    """The index after the last line of the view that starts at ``loc``: ``num_lines`` lines
    when given, else as many as ``view_tokens`` reaches (measured by ``token_lengths`` when it
    tells, else by ``count_tokens``)."""
    total = len(lines)
    if num_lines > 0:
        return min(loc + num_lines, total)
    text = join_lines(lines[loc:], numbered=True, offset=loc)
    if len(text) <= view_tokens:
        return total
    lengths = None
    if token_lengths is not None:
        lengths = token_lengths.lengths(text[: (view_tokens + 1) * token_lengths.longest])
    if lengths is not None:
        shown = _end_by_lengths(text, view_tokens, lengths)
    else:
        shown = _end_by_count(lines, loc, view_tokens, count_tokens)
    return total if shown is None else min(loc + shown, total)
