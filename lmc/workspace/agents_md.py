"""AGENTS.md: the file projects write to brief a coding agent, read as Codex reads it.

Every ``AGENTS.md`` from the repository's root (the nearest folder above the working
directory that holds ``.git``) down to the working directory goes into the developer message,
the root's first, so that a deeper, more specific file comes later and wins. Without a
repository only the working directory's own file counts. The text is capped (bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

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
    return [f / FILE_NAME for f in reversed(folders) if (f / FILE_NAME).is_file()]


def read_agents(workdir: str | Path, max_bytes: int) -> AgentsDoc:
    """The AGENTS.md text for the developer message (empty when there is none)."""
    if max_bytes <= 0:
        return AgentsDoc()
    parts: list[str] = []
    read: list[Path] = []
    left = max_bytes
    truncated = False
    for path in find_agents_files(workdir):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if left <= 0:
            truncated = True
            break
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
