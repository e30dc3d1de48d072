"""Issue 19's traps, each in a real 80x24 terminal (tmux): questions on the terminal with
stdout redirected, the plain display keeping stdin open, the confirm view of a tall block,
reasons and rules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.replay import write_replay
from support.tmux import lmc_env, start

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def test_redirected_stdout_gets_the_answer_and_the_question_stays_on_the_terminal(
    tiny_model: Path, tmp_path: Path
) -> None:
    replay = write_replay(
        tmp_path / "r.txt", [_code("print('made', 6 * 7)"), _final("The answer is 42.")]
    )
    args = ["run", "-m", str(tiny_model), "--replay", str(replay), "compute it"]
    pane, work = start(tmp_path, args, redirect="> answer.txt")
    try:
        pane.wait_for(r"Run this code\?")
        screen = pane.screen()
        assert "python · 1 line" in screen and "print('made', 6 * 7)" in screen
        pane.type_line("y")
        pane.wait_for("LMC-EXITED rc=0")
        answer = (work / "answer.txt").read_text()
        assert "The answer is 42." in answer and "made 42" in answer
        assert "Run this code" not in answer  # the question never went to stdout
    finally:
        pane.kill()


def test_the_plain_display_keeps_stdin_open_for_the_next_block_and_prompt(
    tiny_model: Path, tmp_path: Path
) -> None:
    replay = write_replay(
        tmp_path / "r.txt",
        [_code("print('one')"), _code("print('two')"), _final("Both ran."), _final("Again.")],
    )
    env = lmc_env(tmp_path, NO_COLOR="1", TERM="dumb")
    pane, _ = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay)], env=env)
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("run two blocks")
        pane.wait_for(r"Run this code\?")
        mark = pane.mark()  # before answering: the next question may come at once
        pane.type_line("y")
        pane.wait_for(r"Run this code\?", after=mark)
        pane.type_line("y")
        pane.wait_for(r"Both ran\.[\s\S]*^>\s*$")
        pane.type_line("once more")
        pane.wait_for(r"Again\.[\s\S]*^>\s*$")
        screen = pane.screen()
        assert "closed file" not in screen and "bug in lmc" not in screen
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_a_tall_block_shows_head_tail_and_count_and_v_pages_it_whole(
    tiny_model: Path, tmp_path: Path
) -> None:
    lines = "\n".join(f"x{i} = {i}" for i in range(1, 66))  # 65 lines
    replay = write_replay(tmp_path / "r.txt", [_code(lines), _final("Fine, not run.")])
    env = lmc_env(tmp_path, PAGER="less")
    pane, work = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay)], env=env)
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("assign many")
        pane.wait_for(r"Run this code\?")
        visible = pane.screen(history=False)
        assert "python · 65 lines" in visible
        assert "x1 = 1" in visible and "x65 = 65" in visible  # head and tail
        hidden = 65 - sum(f"x{i} = {i}" in visible for i in range(1, 66))
        assert f"{hidden} more lines (v shows them all)" in visible
        assert "x33 = 33" not in visible
        assert visible.rstrip().splitlines()[-1].startswith("Run this code?")  # on screen
        pane.type_line("v")  # the pager shows the whole block from its first line
        pane.wait_for(r"^x1 = 1$")
        pane.send("/x33")
        pane.send("Enter")
        pane.wait_for(r"^x33 = 33$")
        pane.send("q")
        pane.wait_for(r"Run this code\?[^\n]*\n[\s\S]*Run this code\?")  # asked again
        pane.type_line("n")
        pane.wait_for(r"Why not\?")
        pane.type_line("too long to check")
        pane.wait_for(r"Fine, not run\.[\s\S]*^>\s*$")
        pane.type_line("%save saved.json")
        pane.wait_for(r"saved \d+ messages")
        messages = json.loads((work / "saved.json").read_text())
        outputs = [m["content"] for m in messages if m.get("format") == "output"]
        assert outputs == ["The user declined to run this code. Their reason: too long to check\n"]
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_all_approves_the_rest_of_this_kind_and_approvals_lists_it(
    tiny_model: Path, tmp_path: Path
) -> None:
    replay = write_replay(
        tmp_path / "r.txt",
        [_code("print('first')"), _code("print('second')"), _final("Ran both.")],
    )
    pane, _ = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay)])
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("two blocks")
        pane.wait_for(r"Run this code\?")
        pane.type_line("a")
        pane.wait_for(r"Ran both\.[\s\S]*^>\s*$")
        screen = pane.screen()
        assert screen.count("Run this code?") == 1  # the second python block was not asked
        assert "second" in screen
        mark = pane.mark()
        pane.type_line("%approvals")
        pane.wait_for(r"1\. every python block \(this session\)", after=mark)
        pane.type_line("%approvals remove 1")
        pane.wait_for(r"removed: every python block", after=mark)
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_resume_shows_the_last_messages_and_says_what_the_kernels_bring_back(
    tiny_model: Path, tmp_path: Path
) -> None:
    env = lmc_env(tmp_path, NO_COLOR="1")
    for prompt, answer in (("first question", "One."), ("second question", "Two.")):
        replay = write_replay(tmp_path / f"{answer}.txt", [_code("x = 41"), _final(answer)])
        resume = ["--resume"] if answer == "Two." else []
        args = ["run", "-y", "-m", str(tiny_model), "--replay", str(replay), prompt, *resume]
        done = subprocess.run(
            [sys.executable, "-m", "lmc", *args],
            env={"PATH": "/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    replay = write_replay(tmp_path / "chat.txt", [_final("Three.")])
    pane, _ = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay), "--resume"])
    try:
        screen = pane.wait_for(r"^>\s*$")
        assert re.search(r"… \d+ earlier messages \(lmc history show \S+ shows them all\)", screen)
        assert "first question" not in screen  # not the whole transcript
        assert "Two." in screen and "come back (x)" in screen  # kernel state (issue 31)
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_at_the_step_limit_enter_lets_the_model_go_on(tiny_model: Path, tmp_path: Path) -> None:
    replay = write_replay(
        tmp_path / "r.txt",
        [_code("print('step one')"), _final("All done.")],
    )
    args = ["-y", "--max-steps", "1", "-m", str(tiny_model), "--replay", str(replay)]
    pane, _ = start(tmp_path, args)
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("work")
        screen = pane.wait_for(r"press Enter to let the model go on[\s\S]*^>\s*$")
        assert "Stopped at the step limit" in screen and "--max-steps" in screen
        mark = pane.mark()
        pane.send("Enter")  # one key
        pane.wait_for(r"All done\.", after=mark)
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_reasoning_folds_to_one_line_and_reasoning_show_expands_it(
    tiny_model: Path, tmp_path: Path
) -> None:
    thought = "<|channel|>analysis<|message|>Add the tens first.\nThen the ones.<|end|>"
    thought += "<|start|>assistant<|channel|>final<|message|>{}<|return|>"
    replay = write_replay(
        tmp_path / "r.txt", [thought.format("Forty-two."), thought.format("Forty-three.")]
    )
    pane, _ = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay)])
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("sum it")
        screen = pane.wait_for(r"thought for \d+s \(%reasoning show shows it\)[\s\S]*Forty-two\.")
        assert "Add the tens first." not in screen
        mark = pane.mark()
        pane.type_line("%reasoning")
        pane.wait_for(r"reasoning: hide", after=mark)
        pane.type_line("%reasoning show")
        pane.wait_for(r"reasoning: show", after=mark)
        pane.type_line("again")
        pane.wait_for(r"Add the tens first\.[\s\S]*Forty-three\.", after=mark)
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()


def test_bare_switches_show_their_state_and_change_nothing(
    tiny_model: Path, tmp_path: Path
) -> None:
    replay = write_replay(tmp_path / "r.txt", [_final("Hi.")])
    pane, _ = start(tmp_path, ["-m", str(tiny_model), "--replay", str(replay)])
    try:
        pane.wait_for(r"^>\s*$")
        for switch, state in (
            ("%network", "network: off"),
            ("%verbose", "verbose: off"),
            ("%auto_run", "auto_run: off"),
            ("%reasoning", "reasoning: hide"),
            ("%network", "network: off"),  # still off: the first one changed nothing
            ("%verbose", "verbose: off"),
        ):
            mark = pane.mark()
            pane.type_line(switch)
            pane.wait_for(rf"^{state}$", after=mark)
        assert "restart" not in pane.screen()  # no kernel was touched
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()
