"""lmc in a real terminal: a private tmux server per test, read with capture-pane.

Every wait has a deadline and the server is killed by the test (``kill``), which ends lmc.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Pane:
    """One tmux session on a private server."""

    def __init__(self, socket: str, session: str = "lmc") -> None:
        self.socket, self.session = socket, session

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        ).stdout

    def screen(self, history: bool = True) -> str:
        """The pane's text (with the scrollback unless ``history`` is False: what is visible)."""
        extra = ("-S", "-300") if history else ()
        return self.tmux("capture-pane", "-p", "-J", *extra, "-t", self.session)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def type_line(self, text: str) -> None:
        self.send("-l", text)
        self.send("Enter")

    def wait_for(self, pattern: str, timeout: float = 60.0, after: int = 0) -> str:
        """Wait until ``pattern`` appears on screen after character ``after``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen[after:], re.MULTILINE):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; screen:\n{screen}")
            time.sleep(0.1)

    def mark(self) -> int:
        return len(self.screen().rstrip())

    def kill(self) -> None:
        self.tmux("kill-server")


def lmc_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment that keeps lmc's files under ``tmp_path``."""
    return {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "TERM": "xterm-256color",
        "BROWSER": "true",
        **extra,
    }


def start(
    tmp_path: Path,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    redirect: str = "",
    width: int = 80,
    height: int = 24,
) -> tuple[Pane, Path]:
    """``python -m lmc ARGS [REDIRECT]`` in a fresh tmux server, in ``tmp_path/work``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = lmc_env(tmp_path) if env is None else env
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            "lmc",
            *(shlex.quote(arg) for arg in args),
            redirect,
            "; echo LMC-EXITED rc=$?; sleep 60",
        ]
    )
    pane = Pane(f"lmc-t-{os.getpid()}-{tmp_path.name}")
    pane.tmux(
        "new-session", "-d", "-s", pane.session, "-x", str(width), "-y", str(height),
        "-c", str(work), command,
    )  # fmt: skip
    return pane, work
