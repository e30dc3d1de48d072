"""A stdio server's stderr, kept in a file, and the line of it that explains a failure.

Launchers bury the cause: ``npx`` ends a missing package with "A complete log of this run can
be found in ...", while the line that matters ("'@x/y@*' is not in this registry") comes
earlier; ``uvx`` explains a missing package under "No solution found ...". So the cause is the
first line that matches a known explanation, else the last line.
"""

from __future__ import annotations

import re
import tempfile
from typing import IO, Final

__all__ = ["ServerLog", "cause"]

#: Lines that explain a failure, best first (npm 9-11 write "npm error", older "npm ERR!").
_EXPLAINING: Final = (
    re.compile(r"is not in (?:this|the npm) registry"),
    re.compile(r"npm (?:error|ERR!) 404 Not Found"),
    re.compile(r"not found in the package registry"),
    re.compile(r"npm (?:error|ERR!) (?:code E|errno|syscall|network|notarget)"),
    re.compile(r"^\s*(?:error|Error):"),
)
_NOISE: Final = re.compile(r"A complete log of this run|^npm (?:error|ERR!)\s*\d*\s*$")


def _clean(line: str, limit: int = 200) -> str:
    text = " ".join(line.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cause(text: str) -> str:
    """The line of ``text`` that best explains a failure ("" when there is none)."""
    lines = [line for line in text.splitlines() if line.strip()]
    for pattern in _EXPLAINING:
        for line in lines:
            if pattern.search(line):
                return _clean(line)
    meaningful = [line for line in lines if not _NOISE.search(line)]
    return _clean(meaningful[-1]) if meaningful else ""


class ServerLog:
    """A temporary file for a server's stderr: it must not draw over the terminal."""

    def __init__(self) -> None:
        self.file: IO[str] = tempfile.TemporaryFile(  # noqa: SIM115 - closed by close()
            "w+", encoding="utf-8", errors="replace"
        )

    def text(self) -> str:
        if self.file.closed:
            return ""
        try:
            self.file.flush()
            self.file.seek(0)
            return self.file.read()
        except (OSError, ValueError):
            return ""

    def cause(self) -> str:
        return cause(self.text())

    def close(self) -> None:
        self.file.close()
