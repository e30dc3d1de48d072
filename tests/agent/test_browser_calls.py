"""gpt-oss's browser in the agent loop: the tiny model replays a turn that searches a
SearXNG-shaped server, opens a result, finds a word and answers with a citation."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.agent_testing import MakeInterpreter
from support.mcp_servers import toy_stdio
from support.search_site import SearchSite, search_site

from lmc.agent.storage import ConversationStore
from lmc.agent.tool_calls import TOOL_DECLINED
from lmc.messages import Block, Chunk, text_of
from lmc.terminal.export import to_markdown

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harmony"
FINAL = "<|channel|>final<|message|>{}<|return|>"
ANSWER = "A kernel runs the code of a notebook 【1†L4-L5】."


def browser_call(function: str, arguments: dict[str, Any], channel: str = "analysis") -> str:
    """A call as gpt-oss writes it (tests/fixtures/gptoss_real: ``to=browser.search code``)."""
    text = json.dumps(arguments)
    return f"<|channel|>{channel} to=browser.{function} code<|message|>{text}<|call|>"


def result_header(function: str, channel: str = "analysis") -> str:
    return f"<|start|>browser.{function} to=assistant<|channel|>{channel}<|message|>"


def outputs(chunks: list[Chunk]) -> list[str]:
    return [text_of(c) for c in chunks if c.get("format") == "output" and "content" in c]


def answer(chunks: list[Chunk]) -> str:
    return "".join(
        text_of(c)
        for c in chunks
        if (c["role"], c["type"]) == ("assistant", "message") and "content" in c
    )


def reference_browser_section() -> str:
    """The ``## browser`` section of OpenAI's reference system message, byte for byte."""
    case = json.loads((FIXTURES / "cases.json").read_text())
    expected = next(c for c in case if c["name"] == "test_browser_and_python_tool")["expected"]
    start = expected.index("## browser\n")
    end = expected.index("} // namespace browser\n") + len("} // namespace browser\n")
    return str(expected[start:end])


@pytest.fixture
def make_interpreter(make_interpreter: MakeInterpreter) -> MakeInterpreter:
    """These tests' small context (8,192 tokens of the tiny model's 272-token vocabulary, about
    a byte a token) is for the browser's pages: apply_patch's instructions stay out."""
    return functools.partial(make_interpreter, apply_patch=False)


@pytest.fixture
def site() -> Iterator[SearchSite]:
    with search_site() as running:
        yield running


TURN = [
    browser_call("search", {"query": "jupyter kernels", "topn": 5}),
    browser_call("open", {"id": 0}),
    browser_call("find", {"pattern": "notebook"}),
    FINAL.format(ANSWER),
]


def test_a_turn_that_searches_opens_finds_and_answers(
    make_interpreter: MakeInterpreter, site: SearchSite
) -> None:
    interpreter, backend = make_interpreter(
        TURN, browser="searxng", browser_url=site.url, browser_allow_private=True
    )
    asked: list[Block] = []

    def confirm(block: Block) -> bool:
        asked.append(block)
        return True

    chunks = list(interpreter.chat("what's a kernel?", stream=True, display=False, confirm=confirm))
    # The system message declares the browser exactly as OpenAI's reference does.
    system = backend.prompts[0].split("<|end|>")[0]
    assert reference_browser_section() + "\n## python\n" in system
    # Each call streams as a tool call, is confirmed, then shows the reference view.
    calls = [c["format"] for c in chunks if c["type"] == "tool_call" and c.get("start")]
    assert calls == ["browser.search", "browser.open", "browser.find"]
    assert [block["format"] for block in asked] == calls
    assert asked[0] == {
        "type": "tool_call",
        "format": "browser.search",
        "content": '{"query": "jupyter kernels", "topn": 5}',
    }
    search, page, found = outputs(chunks)
    assert search.startswith("[0] jupyter kernels\n**viewing lines [0 - ")
    assert page.startswith(f"[1] Jupyter kernels explained ({site.url}/docs/kernels.html)\n")
    assert found.startswith("[2] Find results for text: `notebook` in `Jupyter kernels explained`")
    assert "L0: # 【0†match at L4】\nL1: A kernel runs the code of a notebook." in found
    assert site.queries == ["jupyter kernels"]
    assert site.paths == ["/search", "/docs/kernels.html"]
    # The model reads each view as the browser's own message, on the channel of its call.
    assert result_header("search") + search + "<|end|>" in backend.prompts[1]
    assert result_header("open") + page + "<|end|>" in backend.prompts[2]
    assert result_header("find") + found + "<|end|>" in backend.prompts[3]
    assert answer(chunks) == ANSWER
    # Stored and exported like MCP tool calls.
    stored = ConversationStore(interpreter.store.path).load(interpreter.conversation_id or "")
    assert stored == interpreter.messages
    assert {
        "role": "assistant",
        "type": "tool_call",
        "format": "browser.open",
        "content": '{"id": 0}',
    } in stored
    markdown = to_markdown(interpreter.messages)
    assert '**Tool call** `browser.search`\n\n```json\n{"query": "jupyter kernels", "topn": 5}' in (
        markdown
    )


def test_a_declined_call_fetches_nothing_and_the_model_is_told(
    make_interpreter: MakeInterpreter, site: SearchSite
) -> None:
    interpreter, backend = make_interpreter(
        [browser_call("search", {"query": "secret plans"}), FINAL.format("I did not search.")],
        browser="searxng",
        browser_url=site.url,
        browser_allow_private=True,
    )
    chunks = list(
        interpreter.chat("search it", stream=True, display=False, confirm=lambda b: False)
    )
    assert site.queries == [] and site.paths == []
    assert outputs(chunks) == [TOOL_DECLINED + "\n"]
    assert result_header("search") + TOOL_DECLINED + "<|end|>" in backend.prompts[1]


def test_auto_run_calls_without_asking(make_interpreter: MakeInterpreter, site: SearchSite) -> None:
    interpreter, _ = make_interpreter(
        [browser_call("search", {"query": "kernels"}, "commentary"), FINAL.format("Done.")],
        browser="searxng",
        browser_url=site.url,
        browser_allow_private=True,
        auto_run=True,
    )
    chunks = list(interpreter.chat("search", stream=True, display=False))
    assert site.queries == ["kernels"]
    assert outputs(chunks)[0].startswith("[0] kernels\n")


def test_a_backend_failure_is_told_to_the_model_and_the_turn_goes_on(
    make_interpreter: MakeInterpreter, site: SearchSite
) -> None:
    site.json_enabled = False
    interpreter, backend = make_interpreter(
        [browser_call("search", {"query": "kernels"}), FINAL.format("Search is down.")],
        browser="searxng",
        browser_url=site.url,
        browser_allow_private=True,
    )
    chunks = list(interpreter.chat("search", stream=True, display=False, confirm=lambda b: True))
    [told] = outputs(chunks)
    assert told.startswith("Error during search for `kernels`: the SearXNG instance at ")
    assert "add `json` to `search.formats`" in told
    assert result_header("search") + told + "<|end|>" in backend.prompts[1]
    assert answer(chunks) == "Search is down."


def test_a_long_page_costs_one_view_of_the_context(
    make_interpreter: MakeInterpreter, site: SearchSite
) -> None:
    interpreter, backend = make_interpreter(
        [
            browser_call("open", {"id": f"{site.url}/long.html"}),
            browser_call("open", {"loc": 200, "num_lines": 3}),
            FINAL.format("Read."),
        ],
        browser="searxng",
        browser_url=site.url,
        browser_allow_private=True,
        auto_run=True,
    )
    chunks = list(interpreter.chat("read it", stream=True, display=False))
    first, second = outputs(chunks)
    assert len(first) < 6_000 and "Paragraph 399" not in first
    assert "**viewing lines [200 - 202] of " in second
    assert "\nL200: " in second and "\nL202: " in second and "L203: " not in second
    used = [backend.inner.count_tokens(p) for p in backend.prompts]
    assert used[1] - used[0] < 1_600  # one view (about 1,024 tokens) and the call, not the page
    # Views are measured by the model's own token lengths, as the reference measures them (the
    # tiny vocabulary splits "é" into two byte tokens, each a replacement character).
    assert interpreter.browser_tools is not None
    lengths = interpreter.browser_tools.browser.token_lengths
    assert lengths is not None and lengths.lengths("é") == [1, 1]


def test_without_the_browser_nothing_changes(make_interpreter: MakeInterpreter) -> None:
    interpreter, backend = make_interpreter(
        [browser_call("search", {"query": "x"}), FINAL.format("No browser.")]
    )
    chunks = list(interpreter.chat("search", stream=True, display=False, confirm=lambda b: True))
    assert "namespace browser" not in backend.prompts[0]
    notes = [
        text_of(c)
        for c in chunks
        if (c["role"], c["type"]) == ("computer", "message") and "content" in c
    ]
    assert notes[0].startswith("There is no tool named 'browser.search'.")


def test_the_browser_and_mcp_tools_together(
    make_interpreter: MakeInterpreter, site: SearchSite
) -> None:
    add = (
        "<|channel|>commentary to=functions.toy__add <|constrain|>json"
        '<|message|>{"a": 2, "b": 3}<|call|>'
    )
    interpreter, backend = make_interpreter(
        [browser_call("search", {"query": "sums"}), add, FINAL.format("5.")],
        browser="searxng",
        browser_url=site.url,
        browser_allow_private=True,
        mcp_servers={"toy": toy_stdio(tools=["add"])},
        auto_run=True,
    )
    chunks = list(interpreter.chat("add", stream=True, display=False))
    search, added = outputs(chunks)
    assert search.startswith("[0] sums\n") and added == "2 + 3 = 5\n"
    assert "namespace browser" in backend.prompts[0] and "type toy__add" in backend.prompts[0]
