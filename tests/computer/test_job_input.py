"""A job's stdin: real programs handed back as jobs get the model's input, or its end.

While a block is in the foreground its stdin is at end-of-input (a program that reads it gets
it at once, and the model a hint); once the block is a job, the model writes to it or closes
it. Each block waits on a file the test makes, so the program reads only once it is a job:
nothing here depends on the clock. What a test started is found from outside (/proc, by a
command line no other process has) and checked gone at the end.
"""

from __future__ import annotations

import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of
from support.processes import pids_of, unique_seconds, wait_until_gone, wait_until_running

from lmc.computer import Computer
from lmc.computer.job_calls import answer_job_call
from lmc.computer.job_input import job_input
from lmc.computer.jobs import Job

#: Seconds a block runs before it is handed back; nothing waits for it by the clock.
LIMIT = 1.0
#: A block that waits, in the foreground and past its hand-back, until the test makes `go`.
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.05; done\n"


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    with Computer(block_timeout=LIMIT, workdir=tmp_path) as made:
        yield made


def _job(computer: Computer, number: int) -> Job:
    job = computer.jobs.get(number)
    assert job is not None
    return job


def _call(computer: Computer, **arguments: object) -> str:
    return answer_job_call(computer.jobs, {"wait": 0.0, **arguments})


def _poll_until(job: Job, text: str, seen: str = "") -> str:
    deadline = time.monotonic() + 60
    while text not in seen and time.monotonic() < deadline:
        seen += job.poll().output
        if text not in seen:
            job.wait(0.1)
    return seen


def test_a_line_written_to_a_job_is_what_read_gets(computer: Computer, tmp_path: Path) -> None:
    code = WAIT_FOR_GO + 'read -p "Continue? " ans; echo got:$ans'
    chunks = collect(computer, "shell", code)
    out = output_of(chunks)
    assert "goes on in the background as job 1" in out
    # Consumers get it typed too: job 1, a shell job that takes input.
    [typed] = [chunk for chunk in chunks if chunk["type"] == "job"]
    assert typed == {
        "role": "computer",
        "type": "job",
        "format": "handed_back",
        "content": {
            "job": 1,
            "language": "shell",
            "command": "while [ ! -e go ]; do sleep 0.05; done",
            "after": LIMIT,
            "input": True,
        },
    }
    assert '"action": "write", "job": 1' in out  # the note says how to answer it
    said = _call(computer, action="write", job=1, text="yes\n")
    assert said.startswith("job 1: 4 bytes sent; it is still running"), said
    (tmp_path / "go").touch()
    job = _job(computer, 1)
    assert job.wait(60)
    assert "got:yes" in _poll_until(job, "got:yes")
    assert job.state == "finished"
    assert "keyboard input" not in out
    late = _call(computer, action="write", job=1, text="more\n")
    assert late.startswith("job 1 had already finished, so it takes no input"), late


def test_cat_as_a_job_ends_at_eof(computer: Computer, tmp_path: Path) -> None:
    marker = f"marker-{secrets.token_hex(6)}"
    (tmp_path / marker).touch()
    cat = ("cat", "-", marker)  # stdin, then an empty file: a command line all its own
    out = output_of(collect(computer, "shell", WAIT_FOR_GO + f"cat - {marker}; echo cat-ended"))
    assert "job 1" in out
    (tmp_path / "go").touch()
    assert wait_until_running(*cat)
    said = _call(computer, action="write", job=1, text="one", newline=False)
    assert said.startswith("job 1: 3 bytes sent"), said
    ended = _call(computer, action="eof", job=1, wait=60)
    assert ended.startswith("job 1: its input is closed (end of input); it is finished"), ended
    assert "one" in said + ended and "cat-ended" in ended  # each call shows the new output
    assert wait_until_gone(*cat)
    again = _call(computer, action="eof", job=1)
    assert again.startswith("job 1 had already finished"), again


def test_write_after_eof_says_the_input_is_closed(computer: Computer, tmp_path: Path) -> None:
    sleep = ("sleep", unique_seconds(1000))
    code = WAIT_FOR_GO + f"cat; echo cat-ended; {' '.join(sleep)}"
    assert "job 1" in output_of(collect(computer, "shell", code))
    (tmp_path / "go").touch()
    assert "cat-ended" in _call(computer, action="eof", job=1) + _poll_until(
        _job(computer, 1), "cat-ended"
    )
    said = _call(computer, action="write", job=1, text="late")
    assert said.startswith("job 1: no input was sent: its input was already closed"), said
    assert wait_until_running(*sleep)
    computer.close()
    assert wait_until_gone(*sleep)


def test_a_foreground_read_still_gets_end_of_input_and_the_hint(tmp_path: Path) -> None:
    """Without a job there is nobody to type: each reader gets end-of-input at once (long
    before the block's limit would hand it back), and the model is told which program asked."""
    with Computer(block_timeout=600, workdir=tmp_path) as patient:
        code = (
            'read -p "Continue? [y/N] " ans; echo "status=$? [$ans]"\n'
            "cat; echo cat=$?\n"
            f"{sys.executable} -c 'input()' 2>/dev/null; echo python=$?"
        )
        out = output_of(collect(patient, "shell", code))
        # Each reader on its own: node waits in epoll_wait on a set that holds its stdin.
        node = "process.stdin.on('data', () => {}).on('end', () => console.log('node-ended'))"
        alone = [
            output_of(collect(patient, "shell", one))
            for one in ("cat", f"{sys.executable} -c 'input()'", f'node -e "{node}"')
        ]
    assert "asked for keyboard input (read)" in out
    assert "status=1 []" in out and "cat=0" in out and "python=1" in out
    assert "still running" not in out
    assert "asked for keyboard input (cat)" in alone[0]
    assert "asked for keyboard input (python" in alone[1] and "EOFError" in alone[1]
    assert "asked for keyboard input (node)" in alone[2] and "node-ended" in alone[2]


def test_a_block_that_read_in_the_foreground_becomes_a_job_without_input(
    computer: Computer, tmp_path: Path
) -> None:
    code = "read ans; echo read=$?\n" + WAIT_FOR_GO
    out = output_of(collect(computer, "shell", code))
    assert "asked for keyboard input (read)" in out and "read=1" in out
    assert "job 1" in out and '"action": "write"' not in out
    said = _call(computer, action="write", job=1, text="yes")
    assert said.startswith("job 1 takes no input: its input was already closed"), said
    (tmp_path / "go").touch()
    assert _job(computer, 1).wait(60)


def test_a_python_job_says_in_one_line_that_it_takes_no_input(computer: Computer) -> None:
    chunks = collect(computer, "python", "import time\nwhile True: time.sleep(0.05)")
    out = output_of(chunks)
    assert "job 1" in out and '"action": "write"' not in out
    [typed] = [chunk for chunk in chunks if chunk["type"] == "job"]
    assert typed.get("content", {}).get("input") is False
    said = _call(computer, action="write", job=1, text="yes")
    first = said.splitlines()[0]
    assert first.startswith("job 1 takes no input: the python kernel runs the code in its own")
    assert "only shell jobs take input" in first
    assert _call(computer, action="eof", job=1).startswith("job 1 takes no input")
    assert _job(computer, 1).stop().startswith("job 1 stopped")


def test_nothing_is_left_when_the_computer_closes(tmp_path: Path) -> None:
    marker = f"marker-{secrets.token_hex(6)}"
    (tmp_path / marker).touch()
    cat = ("cat", "-", marker)
    with Computer(block_timeout=LIMIT, workdir=tmp_path) as computer:
        out = output_of(collect(computer, "shell", WAIT_FOR_GO + f"cat - {marker}"))
        assert "job 1" in out
        (tmp_path / "go").touch()
        assert wait_until_running(*cat)
    assert wait_until_gone(*cat)
    assert not pids_of(*cat)


def test_every_block_gets_end_of_input_whatever_came_before(tmp_path: Path) -> None:
    """A block's FIFO is kept for the next block while nobody wrote to it or closed it; after
    a reader got end-of-input, or the shell itself exited, the next block gets a new one."""
    blocks = ["echo plain", "cat; echo a=$?", "echo plain", "exit 3", "cat; echo b=$?", "cat"]
    with Computer(block_timeout=600, workdir=tmp_path) as computer:
        outs = [output_of(collect(computer, "shell", code)) for code in blocks]
    assert outs[0] == outs[2] == "plain\n"
    assert "keyboard input (cat)" in outs[1] and "a=0" in outs[1]
    assert "keyboard input (cat)" in outs[4] and "b=0" in outs[4]
    assert "keyboard input (cat)" in outs[5]


def test_which_jobs_take_input_is_said_in_one_line() -> None:
    give, why = job_input("shell", object(), fresh=False)  # a gateway's kernel: not lmc's own
    assert give is None and why == "a shell job on a kernel gateway takes no input"
    give, why = job_input("r", object(), fresh=False)
    assert give is None and why.startswith("the r kernel runs the code in its own process")
