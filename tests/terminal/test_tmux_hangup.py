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
from support.replay import write_replay
from test_tmux_chat import Pane

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_closing_the_terminal_ends_the_kernels_and_their_children(
    tiny_model: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "sleep.pid"
    script = f"sleep 1000 &\necho $! > {pid_file}\necho started"
    call = (
        "<|channel|>commentary to=functions.shell <|constrain|>json"
        f"<|message|>{json.dumps({'code': script})}<|call|>"
    )
    replay = write_replay(
        tmp_path / "r.txt", [call, "<|channel|>final<|message|>Left it.<|return|>"]
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    variables = {
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data"),
        "TERM": "xterm-256color",
        "TMPDIR": str(tmp),
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
    pane.tmux("new-session", "-d", "-s", "term", "-x", "120", "-y", "40", command)
    sleep_pid = None
    try:
        pane.wait_for(r"^>\s*$", timeout=90)
        pane.type_line("leave a sleep behind")
        pane.wait_for("Left it.", timeout=60)
        sleep_pid = int(pid_file.read_text())
        assert _alive(sleep_pid)
    finally:
        pane.tmux("kill-server")  # the terminal goes away: SIGHUP
    deadline = time.monotonic() + 60
    while _alive(sleep_pid) or list(tmp.iterdir()):
        if time.monotonic() > deadline:
            os.kill(sleep_pid, signal.SIGKILL)
            raise AssertionError(f"left behind: sleep alive, {sorted(tmp.iterdir())}")
        time.sleep(0.1)
