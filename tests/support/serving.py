"""``lmc serve`` in a process of its own, its printed lines read as they come."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0


def stderr_of(process: subprocess.Popen[str]) -> str:
    """What a process started with ``stderr=PIPE`` wrote there."""
    assert process.stderr is not None
    return process.stderr.read()


class Serving:
    """``lmc serve`` in a process of its own; its stdout lines arrive on a queue."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lmc", "serve", *args],
            cwd=ROOT,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def printed_url(self) -> str:
        """The chat page's URL with the token, as printed at start."""
        while True:
            line = self.lines.get(timeout=WAIT)
            assert line is not None, stderr_of(self.process)
            found = re.search(r"(http://\S+\?token=\S+)", line)
            if found:
                return found.group(1)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
