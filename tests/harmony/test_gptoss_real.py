"""lmc's parser on completions real gpt-oss models emitted (tests/fixtures/gptoss_real).

Each case is parsed whole and as backend pieces (markers as special tokens, text in small
pieces); the messages must be those a tolerant parser recovers, in order, each with the
terminator that ended it. Garbage fragments marked optional may be dropped or kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmc.harmony.events import Event, MessageEnded, Terminator
from lmc.harmony.parser import StreamParser, split_markers

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gptoss_real"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
IDS = [case["id"] for case in CASES]

_END = {
    Terminator.END: "<|end|>",
    Terminator.CALL: "<|call|>",
    Terminator.RETURN: "<|return|>",
    Terminator.END_OF_STREAM: None,
}


def _content_type(value: str | None) -> str | None:
    """``<|constrain|>json`` and ``json`` mean the same."""
    return value.removeprefix("<|constrain|>") if value else value


def _recovered(events: list[Event]) -> list[dict[str, Any]]:
    return [
        {
            "channel": e.header.channel,
            "recipient": e.header.recipient,
            "content_type": _content_type(e.header.content_type),
            "end": _END[e.terminator],
        }
        for e in events
        if isinstance(e, MessageEnded)
    ]


def _matches(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> bool:
    """``got`` is ``expected`` with some optional (garbage) entries left out or changed."""
    if not expected:
        return not got
    head, rest = expected[0], expected[1:]
    if got and got[0] == head["shape"] and _matches(rest, got[1:]):
        return True
    if head["optional"]:
        return _matches(rest, got) or (bool(got) and _matches(rest, got[1:]))
    return False


def _expected(case: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    shapes = [
        {
            "shape": {
                "channel": e["channel"],
                "recipient": e["recipient"],
                "content_type": _content_type(e["content_type"]),
                "end": e["end"],
            },
            "optional": bool(e.get("optional")),
        }
        for e in case["expected"]
    ]
    texts = [e["text"] for e in case["expected"] if not e.get("optional")]
    return shapes, texts


def _check(case: dict[str, Any], parser: StreamParser, events: list[Event]) -> None:
    shapes, texts = _expected(case)
    got = _recovered(events)
    assert _matches(shapes, got), (got, case["expected"])
    # Every non-optional message's text is recovered exactly, in order.
    recovered = [m.text for m in parser.messages]
    it = iter(recovered)
    assert all(any(text == r for r in it) for text in texts), (recovered, texts)


def test_all_the_cases_are_here() -> None:
    assert len(CASES) == 31
    assert all(case["source"].startswith("https://github.com/") for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_whole_completion(case: dict[str, Any]) -> None:
    parser = StreamParser("assistant")
    events = parser.feed_text(case["raw"]) + parser.finish()
    _check(case, parser, events)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backend_pieces(case: dict[str, Any]) -> None:
    parser = StreamParser("assistant")
    events: list[Event] = []
    for run, special in split_markers(case["raw"]):
        if special:
            events += parser.feed(run, special=True)
        else:
            for i in range(0, len(run), 3):
                events += parser.feed(run[i : i + 3])
    events += parser.finish()
    _check(case, parser, events)


@pytest.mark.parametrize("case_id", ["al-markers-quoted-inside-analysis",
                                     "al-markers-quoted-inside-analysis-2"])  # fmt: skip
def test_markers_quoted_inside_analysis_stay_its_text(case_id: str) -> None:
    """The quoted ``to=functions.get_weather<|channel|>commentary json<|message|>{...}`` is
    text of the analysis message: no second message, no tool call, nothing lost."""
    case = next(c for c in CASES if c["id"] == case_id)
    parser = StreamParser("assistant")
    events = parser.feed_text(case["raw"]) + parser.finish()
    assert len(parser.messages) == 1
    (message,) = parser.messages
    assert (message.channel, message.recipient) == ("analysis", None)
    assert message.text == case["raw"].removeprefix("<|channel|>analysis<|message|>")
    assert "<|channel|>commentary json<|message|>" in message.text
    assert [e.terminator for e in events if isinstance(e, MessageEnded)] == [
        Terminator.END_OF_STREAM
    ]
