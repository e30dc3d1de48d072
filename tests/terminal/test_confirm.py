"""Confirm-before-execute: the answers y, n, e, a, and no terminal at all."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lmc.messages import confirmation_chunk
from lmc.terminal.confirm import NO_TERMINAL, Confirmer, edit_in_editor

BLOCK = {"type": "code", "format": "python", "content": "print(34 / 24)"}


def _asker(*answers: str) -> tuple[list[str], Callable[[str], str]]:
    asked: list[str] = []
    replies: Iterator[str] = iter(answers)

    def ask(question: str) -> str:
        asked.append(question)
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    return asked, ask


def _confirmer(
    *answers: str, edit: Callable[[str, str], str] = edit_in_editor
) -> tuple[Confirmer, list[str], list[str]]:
    asked, ask = _asker(*answers)
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=ask, say=said.append, edit=edit)
    return confirmer, asked, said


def test_yes_and_no() -> None:
    confirmer, asked, _ = _confirmer("y", "n", " YES ", "no")
    assert [confirmer(BLOCK) for _ in range(4)] == [True, False, True, False]
    assert len(asked) == 4


def test_all_runs_this_and_later_blocks_without_asking() -> None:
    confirmer, asked, said = _confirmer("a")
    assert confirmer(BLOCK) is True
    assert confirmer(BLOCK) is True
    assert confirmer.auto_run and len(asked) == 1
    assert "every later code block" in said[0]


def test_edit_returns_the_edited_code() -> None:
    seen: list[tuple[str, str]] = []

    def edit(language: str, code: str) -> str:
        seen.append((language, code))
        return "print(1)\n"

    confirmer, _, _ = _confirmer("e", edit=edit)
    assert confirmer(confirmation_chunk("python", "print(34 / 24)")) == "print(1)\n"
    assert seen == [("python", "print(34 / 24)")]


def test_edit_to_nothing_declines() -> None:
    confirmer, _, said = _confirmer("e", edit=lambda lang, code: "  \n")
    assert confirmer(BLOCK) is False
    assert "empty" in said[0]


def test_unclear_answers_ask_again_and_end_of_input_declines() -> None:
    confirmer, asked, said = _confirmer("maybe", "")
    assert confirmer(BLOCK) is False
    assert len(asked) == 3 and asked[1].startswith("Please answer")
    assert "not run" in said[-1]


def test_auto_run_never_asks() -> None:
    confirmer, asked, _ = _confirmer()
    confirmer.auto_run = True
    assert confirmer(BLOCK) is True and asked == []


def test_no_terminal_declines_and_says_so_once() -> None:
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=None, say=said.append)
    assert confirmer(BLOCK) is False
    assert confirmer(BLOCK) is False
    assert said == [NO_TERMINAL]
    assert confirmer.declined_without_terminal == 2


def test_real_editor_command_edits_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", "sed -i s/24/12/")
    assert edit_in_editor("python", "34 / 24\n") == "34 / 12\n"


def test_failing_editor_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VISUAL", "false")
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=_asker("e", "n")[1], say=said.append)
    assert confirmer(BLOCK) is False
    assert "exited with status 1" in said[0]
    assert os.environ["VISUAL"] == "false"
