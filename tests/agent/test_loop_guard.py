"""The loop guard's counting, and no false stop on the calls of real gpt-oss completions
(tests/fixtures/gptoss_real_calls.json, copied from the conformance corpus with each case's
source)."""

from __future__ import annotations

import json
from pathlib import Path

from lmc.agent.loop_guard import LOOP_STOP, LoopGuard

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gptoss_real_calls.json"


def test_no_false_stop_on_real_gpt_oss_calls() -> None:
    """Each real completion's calls, as a turn whose tool answers the same every time: the
    guard says nothing (no real completion repeats a call three times)."""
    cases = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]
    assert len(cases) == 31
    guard = LoopGuard()
    for case in cases:
        guard.reset()
        for call in case["calls"]:
            assert guard.observe(call["recipient"], call["text"], "same answer") is None
        assert guard.stop_note is None, case["id"]


def test_counting_rules() -> None:
    guard = LoopGuard()
    assert guard.observe("shell", "ls", "a") is None
    assert guard.observe("python", "ls", "a") is None  # another language
    assert guard.observe("shell", "ls", "b") is None  # other output
    assert guard.observe("shell", "ls\n", "a") is None
    warning = guard.observe("shell", "  ls ", "a\n")
    assert warning is not None and "3 times" in warning
    assert guard.stop_note is None
    assert guard.observe("shell", "ls", "a") is None
    assert guard.stop_note is not None and guard.stop_note.startswith(LOOP_STOP)
    guard.reset()
    assert guard.stop_note is None and guard.observe("shell", "ls", "a") is None
