"""Issue 28 in a real 80x24 terminal (tmux): a block that runs past block_timeout is handed
back as a job, %jobs lists it and %stop stops it; one Ctrl-C frees the shell from a program that
ignores SIGINT and the next block runs. What the code started is checked from outside."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.processes import pids_of, unique_seconds, wait_until_gone, wait_until_running
from support.replay import write_replay
from support.tmux import start

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _shell(code: str) -> str:
    head = "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"
    return f"{head}{json.dumps({'code': code})}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def test_a_job_is_listed_and_stopped_in_the_chat(tiny_model: Path, tmp_path: Path) -> None:
    sleep = ("sleep", unique_seconds(1000))
    replay = write_replay(
        tmp_path / "r.txt", [_shell("echo begun; " + " ".join(sleep)), _final("It runs on.")]
    )
    args = ["-y", "--block-timeout", "1", "-m", str(tiny_model), "--replay", str(replay)]
    pane, _ = start(tmp_path, args)
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("start it")
        pane.wait_for(r"It runs on\.[\s\S]*^>\s*$")
        assert wait_until_running(*sleep)
        mark = pane.mark()
        pane.type_line("%jobs")
        pane.wait_for(r"1\s+running\s+\d+s\s+shell: echo begun", after=mark)
        pane.type_line("%stop 1")
        pane.wait_for(r"job 1 stopped", after=mark)
        assert wait_until_gone(*sleep)
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()
    assert not pids_of(*sleep)


def test_one_ctrl_c_frees_the_shell_from_a_program_ignoring_it(
    tiny_model: Path, tmp_path: Path
) -> None:
    sleep = ("sleep", unique_seconds(1000))
    stubborn = f"bash -c 'trap \"\" INT TERM; {' '.join(sleep)}'; echo after-$((40 + 2))"
    replay = write_replay(
        tmp_path / "r.txt",
        [_shell(stubborn), _shell("echo next-block-ran"), _final("Done.")],
    )
    args = ["-y", "--block-timeout", "0", "-m", str(tiny_model), "--replay", str(replay)]
    pane, _ = start(tmp_path, args)
    try:
        pane.wait_for(r"^>\s*$")
        pane.type_line("run the stubborn one")
        assert wait_until_running(*sleep)
        pane.send("C-c")  # one Ctrl-C
        assert wait_until_gone(*sleep)
        pane.wait_for(r"interrupted[\s\S]*^>\s*$")  # (the running box redraws: no mark)
        mark = pane.mark()
        pane.type_line("again")
        pane.wait_for(r"next-block-ran[\s\S]*Done\.", after=mark)
        assert "after-42" not in pane.screen()  # the rest of the block did not run
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.kill()
