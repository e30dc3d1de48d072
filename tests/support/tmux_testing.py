"""A real terminal for the chat tests: ``lmc`` in a private tmux server (tiny model + replay),
typed into with send-keys and read with capture-pane. Every wait has a deadline."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from support.replay import write_replay

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

    @property
    def socket_path(self) -> Path:
        """Where tmux keeps this server's socket (``-L NAME``: $TMUX_TMPDIR/tmux-UID/NAME)."""
        base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp")
        return base / f"tmux-{os.getuid()}" / self.socket

    def kill(self) -> None:
        """End the server and remove its socket: tmux leaves the socket file behind when a
        server is killed or its last session ends (a suite run left dozens)."""
        self.tmux("kill-server")
        self.socket_path.unlink(missing_ok=True)


def start_chat(
    tiny_model: Path, tmp_path: Path, completions: list[str], *flags: str
) -> tuple[Pane, Path]:
    """``lmc`` in a fresh tmux server, replaying ``completions``, in its own work dir."""
    work = tmp_path / "work"
    work.mkdir()
    replay = write_replay(tmp_path / "chat.txt", completions)
    env = {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "TERM": "xterm-256color",
        "BROWSER": "true",
    }
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            "lmc",
            "--model",
            shlex.quote(str(tiny_model)),
            "--replay",
            shlex.quote(str(replay)),
            *flags,
            "; echo LMC-EXITED rc=$?; sleep 60",
        ]
    )
    pane = Pane(f"lmc-test-{os.getpid()}-{tmp_path.name}", "chat")
    pane.tmux("new-session", "-d", "-s", "chat", "-x", "110", "-y", "50", "-c", str(work), command)
    return pane, work
