"""The default caps of a snapshot (a module of its own: importing it starts no git)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Final

__all__ = ["DEFAULT_MAX_FILES", "DEFAULT_MAX_FILE_BYTES", "biggest_folder"]

#: Files larger than this are left out of snapshots (``checkpoint_max_file_size``).
DEFAULT_MAX_FILE_BYTES: Final = 10 * 1024 * 1024
#: Files a snapshot takes at most (``checkpoint_max_files``): beyond, its biggest folders are
#: left out.
DEFAULT_MAX_FILES: Final = 50_000


def biggest_folder(paths: Iterable[str]) -> str | None:
    """The folder holding the most of ``paths`` (the deepest of equals: the least left out);
    None when they are all in the top folder."""
    counts: Counter[str] = Counter()
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            counts["/".join(parts[:depth])] += 1
    if not counts:
        return None
    most = max(counts.values())
    return max((f for f, n in counts.items() if n == most), key=lambda f: f.count("/"))
