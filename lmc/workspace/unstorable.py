"""What git could not take into a snapshot, read from what git said, for a visible note.

Git leaves some paths out of a snapshot on its own and only warns: a folder it cannot open
(a path longer than the system's PATH_MAX, 4,096 bytes on Linux, which code makes easily with
``os.chdir`` in a loop; a folder without read permission) and a name it refuses to store
(``.GIT/x``, ``git~1``: names that are ``.git`` on other systems). Those files would be missing
from the checkpoint without a word, and undo would leave them without saying why. The git
commands run with ``LC_ALL=C``, so the messages read here are git's English ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["TOO_LONG", "shown_path", "unstorable_in"]

#: Why a folder git could not open was left out, when git's message was cut before its reason
#: (git cuts a message at 4,096 bytes: a path that long is the usual cause).
TOO_LONG: Final = "its path is longer than the system allows (4,096 bytes)"
_OPEN: Final = "warning: could not open directory '"
_REFUSED: Final = {
    "error: invalid path '": "git cannot store that name",
    "error: unable to index file '": "git could not read it",
}
_KEPT_PARTS: Final = 3


def shown_path(path: str) -> str:
    """A path short enough to read: its first folders, then ``...`` (a deep path is
    thousands of bytes)."""
    parts = path.rstrip("/").split("/")
    if len(parts) <= _KEPT_PARTS and len(path) <= 200:
        return path.rstrip("/")
    return "/".join(part[:40] for part in parts[:_KEPT_PARTS]) + "/..."


def _quoted(line: str, prefix: str) -> tuple[str, str] | None:
    """(the quoted path, what follows) of a git message that starts with ``prefix``."""
    if not line.startswith(prefix):
        return None
    rest = line[len(prefix) :]
    path, quote, after = rest.rpartition("'")
    if not quote:
        return rest, ""  # cut before the closing quote
    return path, after.removeprefix(":").strip()


def unstorable_in(stderr: Iterable[str]) -> list[tuple[str, str]]:
    """(path, why) for each folder git could not open and each name it refused."""
    out: dict[str, str] = {}
    for line in stderr:
        opened = _quoted(line, _OPEN)
        if opened is not None:
            path, reason = opened
            why = TOO_LONG if not reason or "too long" in reason else reason.lower()
            out.setdefault(shown_path(path), f"git could not open it: {why}")
            continue
        for prefix, why in _REFUSED.items():
            refused = _quoted(line, prefix)
            if refused is not None:
                out.setdefault(shown_path(refused[0]), why)
    return sorted(out.items())
