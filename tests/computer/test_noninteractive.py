"""Programs that would wait for a person fail fast in the kernels, and say what they wanted.

The person's own EDITOR (vim here) is set in lmc's environment, as at a terminal: `git commit`
without -m would open it on the output pipe and wait for good. The kernels get lmc's
no_editor instead; `read` gets end of input and a hint.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer


def _no_process_mentions(needle: str) -> bool:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if needle.encode() in (proc / "cmdline").read_bytes():
                    return False
            except OSError:
                continue
    return True


@pytest.mark.parametrize("sandbox", ["workspace", "off"])
def test_git_commit_without_message_fails_fast_and_says_an_editor_was_wanted(
    sandbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", "vim")
    monkeypatch.setenv("VISUAL", "vim")
    monkeypatch.setenv("GIT_EDITOR", "vim")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("x\n")
    code = (
        "git -c user.email=a@b.c -c user.name=n add f.txt\n"
        "git -c user.email=a@b.c -c user.name=n commit\n"
        "echo status=$?; echo editor=$EDITOR"
    )
    with Computer(
        workdir=repo, sandbox=sandbox, sandbox_writable=[".git"], block_timeout=60
    ) as computer:
        out = output_of(collect(computer, "shell", code))
    assert "wanted to open a text editor" in out
    assert "git commit -m MESSAGE" in out
    assert "status=1" in out
    assert "editor=vim" not in out
    assert "still running" not in out  # failed at once, not handed back
    assert _no_process_mentions(str(repo / ".git" / "COMMIT_EDITMSG"))


def test_read_gets_end_of_input_and_the_model_is_told(tmp_path: Path) -> None:
    with Computer(workdir=tmp_path, block_timeout=60) as computer:
        out = output_of(
            collect(computer, "shell", 'read -p "Continue? [y/N] " ans; echo "status=$? [$ans]"')
        )
    assert "asked for keyboard input (read)" in out
    assert "status=1 []" in out


def test_git_asks_for_no_password(tmp_path: Path) -> None:
    code = "git ls-remote https://example.invalid/nothing.git; echo prompt=$GIT_TERMINAL_PROMPT"
    with Computer(workdir=tmp_path, block_timeout=60) as computer:
        out = output_of(collect(computer, "shell", code))
    assert "prompt=0" in out


def test_node_readline_question_gets_an_empty_line_and_the_model_is_told(tmp_path: Path) -> None:
    code = (
        "const rl = require('readline').createInterface({input: process.stdin});\n"
        "const a = await new Promise((done) => rl.question('Name? ', done));\n"
        "const p = require('readline/promises').createInterface({input: process.stdin});\n"
        "console.log('got', JSON.stringify(a), JSON.stringify(await p.question('Age? ')));"
    )
    with Computer(workdir=tmp_path, block_timeout=60) as computer:
        out = output_of(collect(computer, "javascript", code))
    assert out.count("asked for keyboard input") == 2
    assert 'got "" ""' in out
    assert "still running" not in out


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_an_editor_asked_for_by_name_is_handed_back_and_stopped(tmp_path: Path) -> None:
    """`GIT_EDITOR=vim git commit`: vim waits on the output pipe for good, as the issue saw it;
    the block is handed back after block_timeout and stopping the job ends vim and git, though
    vim shrugs off SIGINT (the kernel escalates to SIGTERM)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("x\n")
    code = (
        "git -c user.email=a@b.c -c user.name=n add f.txt\n"
        "GIT_EDITOR=vim git -c user.email=a@b.c -c user.name=n commit"
    )
    message = str(repo / ".git" / "COMMIT_EDITMSG")
    with Computer(workdir=repo, sandbox="off", block_timeout=1) as computer:
        out = output_of(collect(computer, "shell", code))
        assert "goes on in the background as job 1" in out
        job = computer.jobs.get(1)
        assert job is not None
        deadline = time.monotonic() + 30
        while _no_process_mentions(message):  # vim is there, waiting
            assert time.monotonic() < deadline, "git never started vim"
            time.sleep(0.05)
        assert job.stop().startswith("job 1 ")
        assert job.state == "stopped"
        deadline = time.monotonic() + 30
        while not _no_process_mentions(message):
            assert time.monotonic() < deadline, "vim outlived its job"
            time.sleep(0.05)
