"""Confirm-before-execute: the answers y, n (+reason), e, a, r (rules), and no terminal."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from support.asking import scripted_asker

from lmc.agent.approvals import Declined, parse_rule
from lmc.messages import CodeBlock, confirmation_chunk
from lmc.terminal.confirm import Confirmer, NoTerminalError, edit_in_editor

BLOCK: CodeBlock = {"type": "code", "format": "python", "content": "print(34 / 24)"}
SHELL: CodeBlock = {"type": "code", "format": "shell", "content": "git status"}


def _confirmer(
    *answers: str, edit: Callable[[str, str], str] = edit_in_editor
) -> tuple[Confirmer, list[str], list[str]]:
    asked, ask = scripted_asker(*answers)
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=ask, say=said.append, edit=edit)
    return confirmer, asked, said


def test_yes_and_no_with_and_without_a_reason() -> None:
    confirmer, asked, _ = _confirmer("y", "n", "", " YES ", "no", "it deletes files", "n too slow")
    answers = [confirmer(BLOCK) for _ in range(5)]
    assert answers == [True, Declined(""), True, Declined("it deletes files"), Declined("too slow")]
    assert asked[2].startswith("Why not?")  # n asks for the reason, Enter skips it
    assert len(asked) == 7


def test_all_approves_this_kind_of_block_for_the_session() -> None:
    confirmer, asked, said = _confirmer("a", "y")
    assert confirmer(BLOCK) is True
    assert confirmer(BLOCK) is True  # python again: not asked
    assert len(asked) == 1 and not confirmer.auto_run
    assert "every python block (this session)" in said[0]
    assert confirmer(SHELL) is True  # another language is still asked about
    assert len(asked) == 2
    assert confirmer.approvals.lines() == ["1. every python block (this session)"]


def test_a_prefix_rule_approves_only_plain_commands_with_that_prefix() -> None:
    confirmer, asked, said = _confirmer("r", "", "s")  # the offered prefix, for the session
    assert confirmer(SHELL) is True
    assert asked[1] == "Approve which command prefix or language? [git status] "
    assert "approved commands `git status` for this session" in said[-1]
    n = len(asked)
    assert confirmer({**SHELL, "content": "git status --short\ngit status"}) is True
    assert len(asked) == n  # approved by the rule
    for risky in ("git status; rm -rf ~", "git status && curl x", "git statusx", "git log"):
        asked_now, ask = scripted_asker()
        confirmer.ask = ask
        assert confirmer({**SHELL, "content": risky}) is False, risky  # asked; no answer
        assert len(asked_now) == 1, risky


def test_a_rule_kept_forever_is_saved_in_the_config(tmp_path: Path) -> None:
    from lmc.terminal.saved_rules import remove_saved_rule, save_rule

    config = tmp_path / "config.toml"
    config.write_text('model = "m.gguf"\n\n[sandbox]\nnetwork = false\n')
    confirmer, _, said = _confirmer("r", "git", "f")
    confirmer.save_rule = lambda text: save_rule(config, text)
    assert confirmer(SHELL) is True
    assert "forever (approve.allow in" in said[-1]
    document = tomllib.loads(config.read_text())
    assert document["approve"]["allow"] == ["git"]
    assert document["model"] == "m.gguf" and document["sandbox"] == {"network": False}
    save_rule(config, "python")
    remove_saved_rule(config, "git")
    assert tomllib.loads(config.read_text())["approve"]["allow"] == ["python"]


def test_a_rule_that_does_not_cover_the_block_is_not_added() -> None:
    confirmer, _asked, said = _confirmer("r", "ls", "n", "")
    assert confirmer(SHELL) == Declined("")
    assert "does not cover this block" in said[0]
    assert confirmer.approvals.rules == []


def test_edit_returns_the_edited_code() -> None:
    seen: list[tuple[str, str]] = []

    def edit(language: str, code: str) -> str:
        seen.append((language, code))
        return "print(1)\n"

    confirmer, _, _ = _confirmer("e", edit=edit)
    assert confirmer(confirmation_chunk(BLOCK)) == "print(1)\n"
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


def test_no_terminal_refuses_instead_of_declining() -> None:
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=None, say=said.append)
    with pytest.raises(NoTerminalError, match="pass -y"):
        confirmer(BLOCK)
    confirmer.approvals.add(parse_rule("python"))
    assert confirmer(BLOCK) is True  # a rule answers for the person: nothing to ask


def test_real_editor_command_edits_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", "sed -i s/24/12/")
    assert edit_in_editor("python", "34 / 24\n") == "34 / 12\n"


def test_failing_editor_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VISUAL", "false")
    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=scripted_asker("e", "n")[1], say=said.append)
    assert confirmer(BLOCK) == Declined("")
    assert "exited with status 1" in said[0]
    assert os.environ["VISUAL"] == "false"


@pytest.mark.parametrize("protected", [True, False])
def test_the_editor_never_starts_in_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, protected: bool
) -> None:
    """An editor started in the working directory reads what the code planted there (vim's
    ``.exrc`` with ``exrc`` set, a ``./vi`` found through a ``.`` in PATH); lmc starts it
    in the edited file's own temporary folder. The editor here writes down where it ran."""
    from lmc.terminal import confirm

    work = tmp_path / "work"
    work.mkdir()
    where = tmp_path / "where"
    monkeypatch.chdir(work)
    monkeypatch.setenv("VISUAL", f"sh -c 'pwd > {where}' --")
    if not protected:  # the editor run as before: in the current folder
        real = confirm._run_on_terminal
        monkeypatch.setattr(confirm, "_run_on_terminal", lambda cmd, cwd: real(cmd, None))
    edit_in_editor("python", "print(1)\n")
    ran_in = Path(where.read_text().strip())
    assert (ran_in == work) is not protected
