"""AppleScript through ``osascript`` (macOS), with the code passed as one argv item.

No shell is involved, so quotes, ``$(...)`` and backslashes in the script reach osascript
exactly as written.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

from lmc.computer.chunks import output_chunk
from lmc.computer.output import clean_text
from lmc.messages import Chunk
from lmc.paths import host_which

__all__ = ["AppleScriptRunner", "applescript_command"]

NOT_AVAILABLE = "AppleScript runs only on macOS, through osascript, which is not available here.\n"


def applescript_command(code: str) -> list[str] | None:
    """The argv that runs ``code``, or None when there is no ``osascript``."""
    osascript = host_which("osascript")
    return None if osascript is None else [osascript, "-e", code]


class AppleScriptRunner:
    """Runs one script at a time; :meth:`interrupt` ends it from another thread."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # reentrant: interrupt() may run in a signal handler
        self._process: subprocess.Popen[bytes] | None = None

    def run(self, code: str, *, timeout: float | None) -> Iterator[Chunk]:
        command = applescript_command(code)
        if command is None:
            yield output_chunk(NOT_AVAILABLE)
            return
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        with self._lock:
            self._process = process
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            yield output_chunk(clean_text(output.decode("utf-8", "replace")))
            yield output_chunk(f"Timed out after {timeout:g} s; the script was stopped.\n")
            return
        finally:
            with self._lock:
                self._process = None
        if output:
            yield output_chunk(clean_text(output.decode("utf-8", "replace")))
        if process.returncode != 0:
            yield output_chunk(f"osascript exited with status {process.returncode}\n")

    def interrupt(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
