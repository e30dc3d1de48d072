"""Views end on the line where the reference browser ends them, from every line of a long page.

tests/fixtures/browser/reference_long_page.json holds, for view sizes of 1,024, 100, 37 and
7 tokens, the line after the last one of the view that the reference (gpt-oss 0.0.9,
simple_browser_tool.py; see record_reference.py) shows from each of site/guide.html's 482
lines, read from its own output's scroll bar. The page mixes ASCII with accented, CJK and
dash characters, some of which o200k splits over several tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import tiktoken
from support.o200k import o200k_base, token_lengths

from lmc.browser.page import page_from_html, wrap_lines
from lmc.browser.paging import TokenLengths, view_end

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "browser"
ENDS: dict[str, list[int]] = json.loads((FIXTURES / "reference_long_page.json").read_text())[
    "view_ends"
]
LINES = wrap_lines(
    page_from_html(
        (FIXTURES / "site" / "guide.html").read_text(), "http://docs.test/docs/guide.html"
    ).text
)


@pytest.fixture(scope="module")
def o200k(tmp_path_factory: pytest.TempPathFactory) -> tiktoken.Encoding:
    return o200k_base(tmp_path_factory.mktemp("tiktoken"))


def _counter(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def test_the_vocabulary_is_o200k_base_as_tiktoken_checks_it(o200k: tiktoken.Encoding) -> None:
    assert o200k.name == "o200k_base" and o200k.n_vocab == 200_019
    # Known ids (openai-harmony's tests/test_harmony.py, tiktoken's and others' test tables).
    assert o200k.encode("hello world") == [24912, 2375]
    assert o200k.encode(" 日本語とEnglish 12345!\n") == [
        17428,
        40909,
        5330,
        28881,
        220,
        7633,
        2548,
        4175,
    ]
    assert token_lengths(o200k).longest == 128  # the reference's max_chars_per_token


@pytest.mark.parametrize("size", list(ENDS))
def test_with_token_lengths_every_view_ends_where_the_reference_ends_it(
    o200k: tiktoken.Encoding, size: str
) -> None:
    lengths, count = token_lengths(o200k), _counter(o200k)
    assert len(ENDS[size]) == len(LINES) == 482
    ends = [
        view_end(LINES, loc, -1, int(size), count_tokens=count, token_lengths=lengths)
        for loc in range(len(LINES))
    ]
    assert ends == ENDS[size]
    assert len(set(ends)) > 5  # many different views, not one long one


def test_a_counter_alone_differs_only_where_a_token_splits_a_character(
    o200k: tiktoken.Encoding,
) -> None:
    """What a model backend that only counts gets: the reference's line except after a token
    that holds part of a character, where the reference's sum runs ahead (then it shows one
    line more). Wherever every token before the reference's cut decodes whole, it is exact."""
    count, lengths = _counter(o200k), token_lengths(o200k)
    for size, expected in ENDS.items():
        for loc, end in enumerate(expected):
            counted = view_end(LINES, loc, -1, int(size), count_tokens=count)
            text = "\n".join(f"L{i}: {line}" for i, line in enumerate(LINES[loc:end], loc))
            whole = all(
                len(o200k.decode_single_token_bytes(t).decode("utf-8", "replace"))
                == len(o200k.decode_single_token_bytes(t).decode("utf-8", "ignore"))
                for t in o200k.encode(text, disallowed_special=())
            )
            assert counted == end or (not whole and counted == end - 1), (size, loc)
    del lengths


def test_a_tokenizer_that_cannot_tell_lengths_is_counted(o200k: tiktoken.Encoding) -> None:
    """A server backend's ``token_lengths`` is None: its views are counted instead."""
    count, silent = _counter(o200k), TokenLengths(lambda text: None)
    for loc in (0, 36, 211, 402):
        with_lengths = view_end(LINES, loc, -1, 1024, count_tokens=count, token_lengths=silent)
        assert with_lengths == view_end(LINES, loc, -1, 1024, count_tokens=count)


def test_num_lines_and_short_texts_need_no_tokenizer() -> None:
    def no_count(text: str) -> int:
        raise AssertionError("counted")

    assert view_end(LINES, 10, 5, 1024, count_tokens=no_count) == 15
    assert view_end(LINES, 480, 5, 1024, count_tokens=no_count) == 482
    assert view_end(LINES, 481, -1, 1024, count_tokens=no_count) == 482  # 73 characters
