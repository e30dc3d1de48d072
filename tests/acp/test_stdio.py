"""The protocol owns stdout, and stderr never blocks lmc: checked in a real process whose
stderr pipe nobody reads, which logs megabytes and starts a child that prints to stdout.

Without :func:`lmc.acp.stdio.take_stdio` the same process blocks in its first write to the
full pipe (seen from outside: the kernel says it sleeps in a pipe write)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from support.acp_client import ROOT

PROCESS = """
import os, subprocess, sys
{take}
for _ in range(64):
    sys.stderr.write("x" * 65535 + "\\n")          # 4 MiB of log, never read
subprocess.run([sys.executable, "-c", "print('a child on stdout')"], check=True)
print("a stray print")
os.write({out}, b'{{"jsonrpc": "2.0", "method": "done"}}\\n')
"""


def test_megabytes_of_log_to_an_unread_stderr_do_not_block_and_stdout_stays_the_protocol(
    tmp_path: Path,
) -> None:
    take = "from lmc.acp.stdio import take_stdio\npipes = take_stdio()"
    script = tmp_path / "agent.py"
    script.write_text(PROCESS.format(take=take, out="pipes.out_fd"))
    agent = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert agent.stdout is not None and agent.stderr is not None
    try:
        # Only stdout is read: the protocol's line comes although stderr is never read.
        assert agent.stdout.readline() == b'{"jsonrpc": "2.0", "method": "done"}\n'
        assert agent.stdout.read() == b""  # neither the print nor the child's line
        assert agent.wait(timeout=120) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        log = agent.stderr.read()
        agent.stderr.close()
        agent.stdout.close()
    # The log went to stderr, as much as its pipe held; what did not fit is said first when
    # the writer had not yet started on it (which comes first depends on the scheduler).
    assert re.match(rb"(lmc: \[\d+ bytes of log dropped: stderr was not read\]\n)?x+", log)


def test_without_it_the_same_process_blocks_on_the_unread_stderr(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(PROCESS.format(take="", out="1"))
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wchan = Path(f"/proc/{process.pid}/wchan")
    try:
        for _ in range(2400):  # up to two minutes, polled
            if "pipe_write" in wchan.read_text() or process.poll() is not None:
                break
            time.sleep(0.05)
        assert process.poll() is None, "a plain write to a full stderr pipe returned"
        assert "pipe_write" in wchan.read_text()
    finally:
        process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
