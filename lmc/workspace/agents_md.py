"""AGENTS.md: the file projects write to brief a coding agent, read as Codex reads it.

Every ``AGENTS.md`` from the repository's root (the nearest folder above the working
directory that holds ``.git``) down to the working directory goes into the developer message,
the root's first, so that a deeper, more specific file comes later and wins. Without a
repository only the working directory's own file counts. The text is capped (bytes).

The files are the model's to write, so each is read through :mod:`lmc.workspace.untrusted`:
a link (``AGENTS.md -> ~/.ssh/id_rsa`` or ``-> /proc/self/environ``), a folder, a FIFO or a
device is skipped, and no more than the bytes still allowed are read (a sparse 512 MiB file
costs at most the cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lmc.workspace.untrusted import UnsafePathError, read_regular

__all__ = ["FILE_NAME", "AgentsDoc", "find_agents_files", "read_agents"]

FILE_NAME: Final = "AGENTS.md"


@dataclass(frozen=True, slots=True)
class AgentsDoc:
    """The AGENTS.md files read and the text they make for the developer message."""

    paths: tuple[Path, ...] = ()
    text: str = ""
    truncated: bool = False


def _repository_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def find_agents_files(workdir: str | Path) -> list[Path]:
    """The AGENTS.md files that apply to ``workdir``, the repository root's first."""
    start = Path(workdir).expanduser().resolve()
    root = _repository_root(start)
    folders = [start]
    if root is not None:
        folders = [start, *(p for p in start.parents if p == root or root in p.parents)]
    return [f / FILE_NAME for f in reversed(folders) if _is_regular(f / FILE_NAME)]


def _is_regular(path: Path) -> bool:
    """A regular file itself, not a link to one (``Path.is_file`` follows links)."""
    try:
        return path.lstat().st_mode & 0o170000 == 0o100000
    except OSError:
        return False


def read_agents(workdir: str | Path, max_bytes: int) -> AgentsDoc:
    """The AGENTS.md text for the developer message (empty when there is none)."""
    if max_bytes <= 0:
        return AgentsDoc()
    parts: list[str] = []
    read: list[Path] = []
    left = max_bytes
    truncated = False
    for path in find_agents_files(workdir):
        if left <= 0:
            truncated = True
            break
        try:  # the folder is the person's (resolved); the name in it may be anything
            data = read_regular(path.parent, FILE_NAME, left)
        except (UnsafePathError, OSError):
            continue
        if data is None:
            continue
        if len(data) > left:
            data, truncated = data[:left], True
        left -= len(data)
        text = data.decode("utf-8", "replace").strip()
        read.append(path)
        if text:
            parts.append(f"## {path}\n\n{text}")
    if not parts:
        return AgentsDoc(tuple(read))
    header = (
        "# AGENTS.md\n\nThe project's own instructions for agents, from its AGENTS.md files "
        "(a deeper folder's file takes precedence):"
    )
    body = "\n\n".join([header, *parts])
    if truncated:
        body += f"\n\n[AGENTS.md text cut at {max_bytes:,} bytes]"
    return AgentsDoc(tuple(read), body, truncated)
