"""What changed between two snapshots: per file, new / deleted / modified with ``+N -M``.

The list travels as the content of one LMC chunk of type ``files`` (format ``changes``), so
``--json``, the Python API and ``lmc serve`` carry it as data and each consumer draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lmc.messages import ChangedFile, ChangeKind
from lmc.messages.sanitize import name_for_terminal
from lmc.messages.types import CHANGE_KINDS
from lmc.workspace.shadow import ShadowRepo

__all__ = [
    "CHANGE_KINDS",
    "FileChange",
    "changes_between",
    "changes_from_content",
    "describe_changes",
    "patch_between",
]

_STATUS: Final[dict[str, ChangeKind]] = {"A": "added", "D": "deleted"}


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed file; ``added``/``removed`` are lines (None for a binary file)."""

    path: str
    change: ChangeKind
    added: int | None = 0
    removed: int | None = 0

    def as_content(self) -> ChangedFile:
        return {"path": self.path, "change": self.change, "added": self.added,
                "removed": self.removed}  # fmt: skip

    def stat(self) -> str:
        if self.added is None or self.removed is None:
            return "binary"
        return f"+{self.added} -{self.removed}"


def changes_between(repo: ShadowRepo, before: str, after: str) -> list[FileChange]:
    """The files that differ between two snapshot commits, sorted by path."""
    raw = repo.git("diff-tree", "-r", "-z", "--no-renames", "--raw", before, after).split(b"\0")
    kinds: dict[str, ChangeKind] = {}
    items = iter(raw)
    for header in items:
        if not header.startswith(b":"):
            continue
        path = next(items, b"").decode("utf-8", "surrogateescape")
        status = header.split()[-1].decode()[:1]
        kinds[path] = _STATUS.get(status, "modified")
    counts: dict[str, tuple[int | None, int | None]] = {}
    numstat = repo.git("diff-tree", "-r", "-z", "--no-renames", "--numstat", before, after)
    for record in numstat.split(b"\0"):
        parts = record.split(b"\t", 2)
        if len(parts) != 3:
            continue
        plus, minus, name = parts
        path = name.decode("utf-8", "surrogateescape")
        counts[path] = (None, None) if plus == b"-" else (int(plus), int(minus))
    return [
        FileChange(path, kind, *counts.get(path, (0, 0))) for path, kind in sorted(kinds.items())
    ]


def patch_between(repo: ShadowRepo, before: str, after: str) -> str:
    """The full diff between two snapshot commits (``%diff``)."""
    text = repo.git("diff-tree", "-p", "-r", "--no-renames", "--no-color", before, after)
    return text.decode("utf-8", "replace")


def changes_from_content(content: object) -> list[FileChange]:
    """The changes a ``files`` chunk or message carries (malformed items are skipped)."""
    out: list[FileChange] = []
    if not isinstance(content, list):
        return out
    for item in content:
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            added, removed, change = item.get("added"), item.get("removed"), item.get("change")
            out.append(
                FileChange(
                    item["path"],
                    change if change in CHANGE_KINDS else "modified",
                    added if isinstance(added, int) else None,
                    removed if isinstance(removed, int) else None,
                )
            )
    return out


def describe_changes(changes: list[FileChange]) -> list[str]:
    """One line per file, as the terminal shows them: ``modified  src/a.py  +3 -1``.

    The code chose the names: each is drawn on its one line (a line feed in a name would
    paint a line of its own), control and bidi characters visibly."""
    return [f"{c.change:<8}  {name_for_terminal(c.path)}  {c.stat()}" for c in changes]
