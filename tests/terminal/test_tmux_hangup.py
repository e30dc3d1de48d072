"""Closing the terminal window (SIGHUP) while the chat waits at its prompt: tmux runs ``lmc``
(tiny model + replay), the code leaves a ``sleep`` in the background, then the tmux server is
killed. lmc must end the kernels and what they started, and remove their files."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from support.processes import (
    pids_of,
    unique_seconds,
    wait_gone,
    wait_until_gone,
    wait_until_running,
)
from support.replay import write_replay
from support.tmux_testing import Pane

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_closing_the_terminal_ends_the_kernels_and_their_children(
    tiny_model: Path, tmp_path: Path, short_tmpdir: Path
) -> None:
    background = ("sleep", unique_seconds(1000))
    script = f"{' '.join(background)} &\necho started"
    call = (
        "<|channel|>commentary to=functions.shell <|constrain|>json"
        f"<|message|>{json.dumps({'code': script})}<|call|>"
    )
    replay = write_replay(
        tmp_path / "r.txt", [call, "<|channel|>final<|message|>Left it.<|return|>"]
    )
    variables = {
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data"),
        "TERM": "xterm-256color",
        "TMPDIR": str(short_tmpdir),
    }
    command = " ".join(
        [
            "exec env",
            *(f"{k}={shlex.quote(v)}" for k, v in variables.items()),
            shlex.quote(sys.executable),
            "-m lmc -y --model",
            shlex.quote(str(tiny_model)),
            "--replay",
            shlex.quote(str(replay)),
        ]
    )
    pane = Pane(f"lmc-hup-{os.getpid()}-{tmp_path.name}", "term")
    pane.tmux(
        "new-session", "-d", "-s", "term", "-x", "120", "-y", "40", "-c", str(tmp_path), command
    )
    lmc = None
    try:
        pane.wait_for(r"^>\s*$", timeout=90)
        lmc = int(pane.tmux("display-message", "-p", "-t", "term", "#{pane_pid}"))
        pane.type_line("leave a sleep behind")
        pane.wait_for("Left it.", timeout=60)
        pane.wait_for(r"^>\s*$", timeout=60)  # back at the prompt
        assert wait_until_running(*background), "the background sleep did not start"
    finally:
        pane.tmux("kill-server")  # the terminal goes away: SIGHUP
    if lmc is not None:  # lmc itself leaves too, not only its kernels
        assert wait_gone({lmc}, timeout=60) == set(), "lmc did not exit after SIGHUP"
    gone = wait_until_gone(*background, timeout=60)
    for pid in pids_of(*background):
        os.kill(pid, signal.SIGKILL)
    assert gone, "the background sleep survived the chat"
    deadline = time.monotonic() + 60
    while list(short_tmpdir.iterdir()):  # lmc removes its kernels' files as it closes
        assert time.monotonic() < deadline, f"left behind: {sorted(short_tmpdir.iterdir())}"
        time.sleep(0.1)
