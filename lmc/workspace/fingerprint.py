"""A cheap "has anything changed?" for a working directory, before any git work.

A snapshot costs four git processes even when the block touched nothing, and most blocks
touch nothing (``ls``, ``git status``, a computation). The stat data of every entry (never
following a link) is a fingerprint: the same fingerprint means the same files, so the last
snapshot stands. Like git's own index it must not trust "racily clean" entries: a file
changed within the file system's timestamp granularity of the walk could change again with
the same size and time stamps, so a fingerprint that saw such an entry is not reused.
A tree with more entries than the cap gets no fingerprint (git does the walk instead).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_MAX_ENTRIES", "RACY_NS", "Fingerprint", "tree_fingerprint"]

#: Entries walked at most; a larger tree is left to git.
DEFAULT_MAX_ENTRIES: Final = 20_000
#: Entries changed this recently (ns) are "racily clean": coarse or two-second (FAT) time
#: stamps. Read at each call (the tests set it to 0 for trees they have just written).
RACY_NS = 2_500_000_000

_Entry = tuple[str, int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The stat data of every entry of a tree; ``racy`` when one was changed just now."""

    entries: tuple[_Entry, ...]
    racy: bool

    def same_as(self, other: Fingerprint | None) -> bool:
        """True when ``other`` saw exactly these entries and may be trusted."""
        return other is not None and not other.racy and other.entries == self.entries


def _walk(root: str, skip: Collection[str], max_entries: int) -> list[_Entry] | None:
    entries: list[_Entry] = []
    folders = [""]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(f"{root}/{folder}" if folder else root) as listing:
                for entry in listing:
                    path = f"{folder}/{entry.name}" if folder else entry.name
                    if path in skip:
                        continue
                    info = entry.stat(follow_symlinks=False)
                    entries.append(
                        (path, info.st_mode, info.st_size, info.st_mtime_ns,
                         info.st_ctime_ns, info.st_ino)
                    )  # fmt: skip
                    if len(entries) > max_entries:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(path)
        except OSError:
            return None  # a folder that vanished or cannot be read: let git decide
    entries.sort()
    return entries


def tree_fingerprint(
    root: str | Path, skip: Collection[str] = (), max_entries: int = DEFAULT_MAX_ENTRIES
) -> Fingerprint | None:
    """The fingerprint of ``root`` (``skip``: relative paths left out, with what is under
    them; the project's ``.git`` always is), or None for a tree larger than the cap."""
    started = time.time_ns()
    top = os.lstat(root)
    entries = _walk(str(root), {".git", *skip}, max_entries)
    if entries is None:
        return None
    entries.append((".", top.st_mode, 0, top.st_mtime_ns, top.st_ctime_ns, top.st_ino))
    # Only a file's content can change unseen within one time stamp: a folder's times say
    # that its listing changed, and the listing (names, inodes) is in the fingerprint. A
    # folder touched just now (a file made and removed in it, as another tool does in the
    # working directory) would otherwise make every snapshot of the next seconds run git.
    times = [max(e[3], e[4]) for e in entries if not stat.S_ISDIR(e[1])]
    return Fingerprint(tuple(entries), racy=max(times, default=0) >= started - RACY_NS)
