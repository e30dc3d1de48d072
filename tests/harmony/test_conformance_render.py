"""lmc's renderer against openai/harmony's own fixtures (tests/fixtures/harmony, Apache-2.0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmc.harmony.conversation import Conversation
from lmc.harmony.render import render_conversation

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harmony"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
RENDER_CASES = [case for case in CASES if case["kind"] == "render"]


def test_every_render_case_is_here() -> None:
    assert len(RENDER_CASES) == 19
    for case in RENDER_CASES:
        assert (FIXTURES / f"{case['name']}.txt").is_file(), case["name"]


def _render(case: dict[str, Any]) -> str:
    return render_conversation(
        Conversation.from_json(case["conversation"]),
        next_role=case["next_role"],
        auto_drop_analysis=case["auto_drop_analysis"],
    )


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c["name"] for c in RENDER_CASES])
def test_render_matches_expected_byte_for_byte(case: dict[str, Any]) -> None:
    assert _render(case) == case["expected"]


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c["name"] for c in RENDER_CASES])
def test_render_matches_fixture_file(case: dict[str, Any]) -> None:
    # The fixture files differ from the output only by a trailing newline in some of them.
    fixture = (FIXTURES / f"{case['name']}.txt").read_text(encoding="utf-8")
    assert _render(case).rstrip() == fixture.rstrip()


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c["name"] for c in RENDER_CASES])
def test_conversation_json_round_trips(case: dict[str, Any]) -> None:
    conversation = Conversation.from_json(case["conversation"])
    again = Conversation.from_json(json.loads(json.dumps(conversation.to_json())))
    assert again == conversation
    assert render_conversation(again, next_role=case["next_role"]) == render_conversation(
        conversation, next_role=case["next_role"]
    )
