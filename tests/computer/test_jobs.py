"""Blocks handed back after block_timeout: real programs go on as jobs, polled and stopped.

Each test checks from outside (/proc, by a command line no other process has) that what it
started is running while it should and gone once the job is stopped or the computer closed.
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
from lmc.computer.jobs import Job

#: Seconds a block runs before it is handed back: short, so the tests are; nothing here waits
#: for it to pass by the clock (each block waits on a file the test makes, or forever).
LIMIT = 1.0


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    with Computer(block_timeout=LIMIT, workdir=tmp_path) as made:
        yield made


def _job(computer: Computer, number: int) -> Job:
    job = computer.jobs.get(number)
    assert job is not None
    return job


def _poll_until(job: Job, text: str, seen: str = "") -> str:
    """Poll the job until ``text`` is in what it wrote (or the job is over)."""
    deadline = time.monotonic() + 60
    while text not in seen and time.monotonic() < deadline:
        seen += job.poll().output
        if text not in seen:
            job.wait(0.1)
    return seen


def test_shell_block_is_handed_back_and_the_next_shell_block_runs(computer: Computer) -> None:
    sleep = ("sleep", unique_seconds(1000))
    out = output_of(collect(computer, "shell", f"echo started; {' '.join(sleep)}; echo never"))
    assert "still running after 1 s" in out
    assert "job 1" in out
    assert not computer.last_run_failed
    assert wait_until_running(*sleep)
    job = _job(computer, 1)
    assert job.running and job.language == "shell" and job.command.startswith("echo started")
    assert "started" in _poll_until(job, "started", out)
    # The next shell block runs in a fresh shell at once.
    assert output_of(collect(computer, "shell", "echo next")) == "next\n"
    said = job.stop()
    assert said.startswith("job 1 "), said  # stopped by the interrupt (or, late, the kill)
    assert wait_until_gone(*sleep)
    assert job.state == "stopped"
    assert "never" not in job.poll().output


def test_a_job_that_ends_by_itself_is_finished(computer: Computer, tmp_path: Path) -> None:
    code = "echo waiting\nwhile [ ! -e go ]; do sleep 0.05; done\necho done-now"
    out = output_of(collect(computer, "shell", code))
    assert "job 1" in out
    job = _job(computer, 1)
    (tmp_path / "go").touch()
    assert job.wait(60)
    assert "done-now" in _poll_until(job, "done-now", out)
    assert job.state == "finished"
    assert job.stop() == "job 1 had already finished"


def test_python_kernel_is_busy_with_its_job_and_keeps_its_state(computer: Computer) -> None:
    collect(computer, "python", "kept = 41")
    code = "import time\nfor i in range(9**9):\n    print('tick', i)\n    time.sleep(.2)"
    out = output_of(collect(computer, "python", code))
    assert "job 1" in out and "python kernel is busy" in out
    busy = output_of(collect(computer, "python", "print(kept)"))
    assert "still running job 1" in busy
    assert computer.last_run_failed
    # Other languages run meanwhile.
    assert output_of(collect(computer, "shell", "echo free")) == "free\n"
    job = _job(computer, 1)
    assert "tick" in _poll_until(job, "tick 1", out)
    assert job.stop() == "job 1 stopped (interrupted)"
    assert output_of(collect(computer, "python", "print(kept + 1)")) == "42\n"


def test_close_stops_every_job_and_leaves_no_process(tmp_path: Path) -> None:
    port = str(20000 + secrets.randbelow(30000))
    server = (sys.executable, "-m", "http.server", port)
    sleep = ("sleep", unique_seconds(1000))
    with Computer(block_timeout=LIMIT, workdir=tmp_path) as computer:
        out = output_of(collect(computer, "shell", " ".join(server)))
        assert "job 1" in out
        collect(computer, "shell", " ".join(sleep))
        assert wait_until_running(*server) and wait_until_running(*sleep)
        assert [job.state for job in computer.jobs.list()] == ["running", "running"]
    assert wait_until_gone(*server) and wait_until_gone(*sleep)
    assert not pids_of(*server)


def test_no_hand_back_without_block_timeout(tmp_path: Path) -> None:
    with Computer(block_timeout=0, workdir=tmp_path) as computer:
        assert computer.block_timeout is None
        out = output_of(collect(computer, "python", "import time\ntime.sleep(30)", timeout=0.5))
        assert "Timed out after 0.5 s" in out
        assert not computer.jobs.list()


def test_a_long_command_is_listed_by_its_start_and_its_end() -> None:
    """A job started through a long interpreter path is still known by what it runs."""
    from lmc.computer.jobs import _shortened

    long = "/tmp/" + "p" * 120 + "/.venv/bin/python -m http.server 8123"
    shown = _shortened(long)
    assert len(shown) == 60 and shown.startswith("/tmp/ppp") and shown.endswith("http.server 8123")
    assert _shortened("python3 -m http.server 8123") == "python3 -m http.server 8123"
