"""lmc's browser shows exactly what OpenAI's reference browser shows, byte for byte.

tests/fixtures/browser/reference_session.json was recorded by running the reference
implementation (openai/gpt-oss, gpt_oss/tools/simple_browser) over the pages in
tests/fixtures/browser/site with record_reference.py (the commit and the set-up are in its
docstring): searches, links followed by number, finds, scrolls, URLs and every error the
script provokes. The same calls go through lmc's Browser over the same pages here.

reference_long_page.json is the same over site/guide.html, six views of 1,024 o200k tokens
long: the views after the first reached by scrolling, by a cursor and by find matches (the
find page itself three views long). The reference sized them with tiktoken's o200k_base, and
so does lmc here (tests/support/o200k.py: tiktoken's own encoding, its vocabulary from the
bpe-openai package instead of a download).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from support.o200k import o200k_base, token_lengths

from lmc.browser.backends import results_page
from lmc.browser.page import Page, page_from_html
from lmc.browser.session import Browser
from lmc.browser.tools import BrowserTools
from lmc.errors import BrowserError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "browser"
SITE = FIXTURES / "site"
PAGES = {
    "http://docs.test/docs/kernels.html": "kernels.html",
    "http://docs.test/docs/protocol.html": "protocol.html",
    "http://docs.test/docs/guide.html": "guide.html",
}
RECORDS: list[dict[str, Any]] = json.loads((FIXTURES / "reference_session.json").read_text())
LONG_PAGE: dict[str, Any] = json.loads((FIXTURES / "reference_long_page.json").read_text())
_SCROLLBAR = re.compile(r"\*\*viewing lines \[(\d+) - (\d+)\] of (\d+)\*\*")


class SiteBackend:
    """The recorded session's backend: the same result list and pages, through lmc's code."""

    name = "site"

    def __init__(self) -> None:
        self.opened: list[str] = []

    def search(self, query: str, count: int) -> Page:
        results = json.loads((SITE / "results.json").read_text())
        return results_page(query, [tuple(r) for r in results][:count])

    def open(self, url: str) -> Page:
        self.opened.append(url)
        if url not in PAGES:
            raise BrowserError(f"no page {url}")
        return page_from_html((SITE / PAGES[url]).read_text(), url)

    def close(self) -> None:
        pass


def test_the_recording_covers_every_function_and_the_errors() -> None:
    functions = {r["function"] for r in RECORDS}
    assert functions == {"search", "open", "find"}
    assert any(r["output"].startswith("Invalid link id") for r in RECORDS)
    assert any(r["output"].startswith("Cursor `7` is out of range") for r in RECORDS)
    assert any(r["output"].startswith("Invalid location parameter") for r in RECORDS)


@pytest.fixture(scope="module")
def o200k(tmp_path_factory: pytest.TempPathFactory) -> tiktoken.Encoding:
    return o200k_base(tmp_path_factory.mktemp("tiktoken"))


def _replay(browser: Browser, records: list[dict[str, Any]]) -> None:
    tools = BrowserTools(browser)
    for record in records:
        tool = tools.find(f"browser.{record['function']}")
        assert tool is not None
        arguments = tools.arguments(tool, json.dumps(record["arguments"]))
        [chunk] = tools.call(tool, arguments)
        assert chunk["content"] == record["output"], record


def test_a_scripted_session_matches_the_reference_byte_for_byte() -> None:
    _replay(Browser(SiteBackend()), RECORDS)


def test_the_long_recording_covers_views_past_the_first_of_a_page_and_of_a_find() -> None:
    views = [
        (r["output"].split(" ", 2)[1], *map(int, m.groups()))
        for r in LONG_PAGE["session"]
        if (m := _SCROLLBAR.search(r["output"]))
    ]
    page = [(first, last) for title, first, last, total in views if title == "The" and total == 481]
    assert (0, 81) in page and (82, 161) in page and (402, 481) in page  # first, second, last
    assert (481, 481) in page  # the last line alone
    finds = [(first, last, total) for title, first, last, total in views if title == "Find"]
    assert (0, 90, 298) in finds and (91, 180, 298) in finds and (250, 298, 298) in finds
    assert any(
        r["output"].startswith("Invalid location parameter: `482`") for r in LONG_PAGE["session"]
    )


def test_a_page_six_views_long_matches_the_reference_byte_for_byte(
    o200k: tiktoken.Encoding,
) -> None:
    """Each view ends on the reference's line: lmc measures with o200k's token lengths, as the
    reference does (a token that splits a character counts as a replacement character)."""
    _replay(Browser(SiteBackend(), token_lengths=token_lengths(o200k)), LONG_PAGE["session"])


def test_pages_once_opened_come_from_the_stack_and_urls_are_fetched_again() -> None:
    backend = SiteBackend()
    browser = Browser(backend)
    browser.search("jupyter kernels")
    browser.open(0)
    browser.find("kernel")
    browser.open(1)  # a find match: the page already opened, not fetched again
    assert backend.opened == ["http://docs.test/docs/kernels.html"]
    browser.open("http://docs.test/docs/kernels.html")  # a URL: fetched again, as a refresh
    assert len(backend.opened) == 2


@pytest.mark.parametrize(
    ("function", "arguments", "message"),
    [
        ("search", "{}", "browser.search needs `query`"),
        ("search", '{"query": 3}', "browser.search: `query` must be a string"),
        ("open", '{"id": true}', "browser.open: `id` must be a number or a string"),
        ("open", '{"cursor": "a"}', "browser.open: `cursor` must be a number"),
        ("open", "[1]", "browser.open: the arguments must be a JSON object"),
        ("find", "{oops", "browser.find: the arguments are not valid JSON"),
        ("find", '{"cursor": 1}', "browser.find needs `pattern`"),
    ],
)
def test_bad_arguments_are_one_line_for_the_model(
    function: str, arguments: str, message: str
) -> None:
    tools = BrowserTools(Browser(SiteBackend()))
    tool = tools.find(f"browser.{function}")
    assert tool is not None
    with pytest.raises(ValueError) as raised:
        tools.arguments(tool, arguments)
    assert str(raised.value) == message


def test_whole_floats_and_empty_arguments_are_accepted() -> None:
    tools = BrowserTools(Browser(SiteBackend()))
    tool = tools.find("browser.open")
    assert tool is not None
    assert tools.arguments(tool, '{"id": 2.0, "loc": 4}') == {"id": 2, "loc": 4}
    assert tools.arguments(tool, "") == {}
    [chunk] = tools.call(tool, {})
    assert chunk["content"] == "No pages to access!"
