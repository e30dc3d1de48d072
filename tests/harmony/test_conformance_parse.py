"""lmc's parser against the parse cases of openai/harmony's fixtures (tests/fixtures/harmony).

Each case is parsed whole, grown one character at a time, fed as backend pieces (markers as
special tokens, text in 4-character pieces), and as UTF-8 bytes one byte at a time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmc.harmony.events import ParseProblem
from lmc.harmony.parser import StreamParser, parse_completion, split_markers
from lmc.harmony.types import Message

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harmony"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
PARSE_CASES = [case for case in CASES if case["kind"] == "parse"]
IDS = [case["name"] for case in PARSE_CASES]


def as_json(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_json() for m in messages]


def test_every_parse_case_is_here() -> None:
    assert len(PARSE_CASES) == 7
    assert len(CASES) == 26


@pytest.mark.parametrize("case", PARSE_CASES, ids=IDS)
def test_whole_completion(case: dict[str, Any]) -> None:
    assert as_json(parse_completion(case["completion"], case["role"])) == case["expected"]


@pytest.mark.parametrize("case", PARSE_CASES, ids=IDS)
def test_grown_one_character_at_a_time_without_problems(case: dict[str, Any]) -> None:
    parser = StreamParser(case["role"])
    events = [e for char in case["completion"] for e in parser.feed_text(char)]
    events += parser.finish()
    assert as_json(parser.messages) == case["expected"]
    assert not [e for e in events if isinstance(e, ParseProblem)]


@pytest.mark.parametrize("case", PARSE_CASES, ids=IDS)
def test_backend_pieces_text_and_bytes(case: dict[str, Any]) -> None:
    for as_bytes in (False, True):
        parser = StreamParser(case["role"])
        for run, special in split_markers(case["completion"]):
            if special:
                parser.feed(run, special=True)
            elif as_bytes:
                for byte in run.encode():
                    parser.feed(bytes([byte]))
            else:
                for i in range(0, len(run), 4):
                    parser.feed(run[i : i + 4])
        parser.finish()
        assert as_json(parser.messages) == case["expected"]
