"""The shared side-by-side benchmark (``../shared/bench/bench_vs_codex.py``) with exact wall times.

The shared harness waits for each tool with ``Popen.wait(timeout)``, which CPython implements
as a poll with sleeps doubling up to 50 ms: a run's end is seen only at the next poll, so every
wall time it prints lies on a grid ~50 ms apart (0.164 s, 0.214 s, 0.264 s, ...) for both
tools, and a fixed cost fitted through such points moves by tens of ms when one median crosses a
line. This runs the same harness, arguments and all, with ``Popen.wait(timeout)`` waiting on
the process's pidfd instead (woken the moment it exits); everything else is the shared code.

    python scripts/bench_vs_codex_exact.py [the shared benchmark's options]
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench" / "bench_vs_codex.py"
_wait = subprocess.Popen.wait


def _exact_wait(self: subprocess.Popen[Any], timeout: float | None = None) -> int:
    """``Popen.wait`` that returns as the process exits (pidfd), not at the next poll."""
    if timeout is None or self.returncode is not None or not hasattr(os, "pidfd_open"):
        return _wait(self, timeout)
    try:
        pidfd = os.pidfd_open(self.pid)
    except OSError:
        return _wait(self, timeout)
    try:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            select.select([pidfd], [], [], left)
    finally:
        os.close(pidfd)
    assert self.returncode is not None
    return self.returncode


def main() -> None:
    if not SHARED.is_file():
        sys.exit(f"bench_vs_codex_exact: the shared benchmark is not at {SHARED}")
    subprocess.Popen.wait = _exact_wait  # type: ignore[method-assign]
    sys.argv[0] = str(SHARED)
    sys.path.insert(0, str(SHARED.parent))
    import runpy

    runpy.run_path(str(SHARED), run_name="__main__")


if __name__ == "__main__":
    main()
