"""Git repositories the model's code made or changed, checked for what git would run.

The sandbox keeps a ``.git`` that existed when the kernel started read-only, but code may
``git init`` where there was none (the working directory, a new folder), and that ``.git``
is the person's after the session: their next ``git status`` there runs its
``core.fsmonitor``, their ``git commit`` its hooks, outside the sandbox. So after each block
lmc's own process looks for repositories in the working directory (a ``.git`` folder, a
``.git`` file or link and where it points, a folder shaped like a bare repository: git finds
all three), breadth first and bounded, reading their config and hooks only through
:mod:`lmc.workspace.untrusted` and parsing the config in Python (git never runs on it).

What makes git run a program and was not there before the session's first block is switched
off where it is, reversibly: the config line commented out (``#lmc-off#``), the hook (or a
``.git`` file pointing out of the working directory) renamed with ``.lmc-off`` at its end.
The person is told which file and which setting. A plain ``git init`` and ``git commit``
(user.name, remotes, branches) names no program and is left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lmc.messages.sanitize import name_for_terminal
from lmc.workspace.git_config import ConfigLine, risky_lines, switched_off
from lmc.workspace.untrusted import (
    UnsafePathError,
    checked_parts,
    open_folder,
    read_regular,
    write_regular,
)

__all__ = ["OFF_SUFFIX", "GitRisk", "find_risks", "risks_note", "switch_off"]

#: Folders below the working directory searched for repositories (``a/b/c/d/.git``).
MAX_DEPTH: Final = 4
#: Folders looked into at most (breadth first: the shallow ones first).
MAX_FOLDERS: Final = 4_000
_MAX_CONFIG_BYTES: Final = 1 << 20
_MAX_GITFILE_BYTES: Final = 4096
_MAX_HOOK_BYTES: Final = 1 << 20
#: What a switched-off hook (or ``.git`` file) gets at the end of its name.
OFF_SUFFIX: Final = ".lmc-off"
_CONFIGS: Final = ("config", "config.worktree")


@dataclass(frozen=True, slots=True)
class GitRisk:
    """One thing in a repository that makes git run a program."""

    path: str  # the file, relative to the working directory
    what: str  # "core.fsmonitor", "an executable hook", ...
    detail: str  # the value, the link's target (for the person, drawn safely)
    key: str  # what identifies it across scans (content digest included)
    lines: tuple[ConfigLine, ...] = ()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _kind(entry: os.DirEntry[str]) -> int:
    """A folder, a link or anything else, from the listing itself (no stat per entry)."""
    if entry.is_symlink():
        return stat.S_IFLNK
    return stat.S_IFDIR if entry.is_dir(follow_symlinks=False) else stat.S_IFREG


def _listing(root: Path, folder: str, *, modes: bool = False) -> dict[str, int] | None:
    """A folder's entries and their kinds (with ``modes``, their full modes; links not
    followed); None when it cannot be read."""
    try:
        parts = checked_parts(folder) if folder else ()
        with open_folder(root, parts) as fd, os.scandir(fd) as listing:
            if modes:
                return {e.name: e.stat(follow_symlinks=False).st_mode for e in listing}
            return {entry.name: _kind(entry) for entry in listing}
    except (OSError, UnsafePathError):
        return None


def _folders(root: Path) -> Iterator[tuple[str, dict[str, int]]]:
    """(relative folder, its entries), breadth first, never through a link, bounded."""
    queue: deque[str] = deque([""])
    seen = 0
    while queue and seen < MAX_FOLDERS:
        folder = queue.popleft()
        seen += 1
        entries = _listing(root, folder)
        if entries is None:
            continue
        yield folder, entries
        if folder.count("/") + (1 if folder else 0) >= MAX_DEPTH:
            continue
        if {"HEAD", "objects", "refs"} <= set(entries):
            continue  # a repository itself: not walked into
        for name, mode in entries.items():
            if name != ".git" and stat.S_ISDIR(mode):
                queue.append(_join(folder, name))


def _link_target(root: Path, path: str) -> str:
    """What the link at ``path`` says (read from its folder's descriptor, never followed)."""
    parts = checked_parts(path)
    try:
        with open_folder(root, parts[:-1]) as fd:
            return os.readlink(parts[-1], dir_fd=fd)
    except (OSError, UnsafePathError):
        return "?"


def _lstat(root: Path, path: str) -> os.stat_result | None:
    parts = checked_parts(path)
    try:
        with open_folder(root, parts[:-1]) as fd:
            return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except (OSError, UnsafePathError):
        return None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _inside(root: Path, target: str) -> str | None:
    """``target`` relative to ``root`` when it is inside it (links resolved), else None."""
    real = Path(os.path.realpath(target))
    try:
        relative = real.relative_to(root)
    except ValueError:
        return None
    return relative.as_posix() if str(relative) != "." else ""


def _pointer(root: Path, path: str) -> tuple[str | None, str]:
    """A ``.git`` file's (or a ``commondir``'s) target inside ``root``, and what it says."""
    try:
        data = read_regular(root, path, _MAX_GITFILE_BYTES) or b""
    except UnsafePathError:
        data = b""
    text = data[:_MAX_GITFILE_BYTES].decode("utf-8", "replace").strip()
    target = text.removeprefix("gitdir:").strip()
    if not target:
        return None, text
    folder = (root / path).parent
    return _inside(root, str(folder / target)), target


def _config_risks(root: Path, gitdir: str) -> list[GitRisk]:
    out: list[GitRisk] = []
    for name in _CONFIGS:
        path = _join(gitdir, name)
        with contextlib.suppress(UnsafePathError):
            data = read_regular(root, path, _MAX_CONFIG_BYTES)
            if data is None:
                continue
            text = data[:_MAX_CONFIG_BYTES].decode("utf-8", "surrogateescape")
            for line in risky_lines(text):
                key = f"{path}\0{line.name}\0{line.value}"
                out.append(GitRisk(path, line.name, line.value, key, (line,)))
    return out


def _hook_risks(root: Path, gitdir: str) -> list[GitRisk]:
    hooks = _join(gitdir, "hooks")
    info = _lstat(root, hooks)
    if info is None:
        return []
    if stat.S_ISLNK(info.st_mode):
        target = _link_target(root, hooks)
        return [GitRisk(hooks, "a hooks folder that is a link", target, f"{hooks}\0{target}")]
    out: list[GitRisk] = []
    for name, mode in (_listing(root, hooks, modes=True) or {}).items():
        if name.endswith((".sample", OFF_SUFFIX)):
            continue
        path = _join(hooks, name)
        if stat.S_ISLNK(mode):
            target = _link_target(root, path)
            out.append(GitRisk(path, "a hook that is a link", target, f"{path}\0{target}"))
            continue
        if stat.S_ISREG(mode) and mode & 0o111:
            with contextlib.suppress(UnsafePathError):
                data = read_regular(root, path, _MAX_HOOK_BYTES) or b""
                out.append(GitRisk(path, "an executable hook", "", f"{path}\0{_digest(data)}"))
    return out


def _gitdir_risks(root: Path, gitdir: str, done: set[str]) -> list[GitRisk]:
    if gitdir in done:
        return []
    done.add(gitdir)
    out = [*_config_risks(root, gitdir), *_hook_risks(root, gitdir)]
    common = _join(gitdir, "commondir")
    if _lstat(root, common) is not None:
        inside, said = _pointer(root, common)
        if inside is None:
            out.append(GitRisk(common, "a commondir outside the working directory", said,
                               f"{common}\0{said}"))  # fmt: skip
        else:
            out += _gitdir_risks(root, inside, done)
    return out


def _dot_git_risks(root: Path, path: str, mode: int, done: set[str]) -> list[GitRisk]:
    if stat.S_ISDIR(mode):
        return _gitdir_risks(root, path, done)
    if stat.S_ISLNK(mode):
        target = _link_target(root, path)
        inside = _inside(root, str(root / path))
        if inside is None:
            what = "a .git link out of the working directory"
            return [GitRisk(path, what, target, f"{path}\0{target}")]
        return _gitdir_risks(root, inside, done)
    inside, said = _pointer(root, path)
    if inside is None:
        what = "a .git file pointing out of the working directory"
        return [GitRisk(path, what, said, f"{path}\0{said}")]
    return _gitdir_risks(root, inside, done)


def find_risks(root: str | Path) -> list[GitRisk]:
    """Everything in the repositories under ``root`` (bounded) that makes git run a program."""
    base = Path(root).resolve()
    out: list[GitRisk] = []
    done: set[str] = set()
    for folder, entries in _folders(base):
        if {"HEAD", "objects", "refs"} <= set(entries):
            out += _gitdir_risks(base, folder, done)  # a bare repository: git finds it here
        dot = entries.get(".git")
        if dot is not None:
            out += _dot_git_risks(base, _join(folder, ".git"), dot, done)
    return out


def _rename_off(root: Path, path: str) -> None:
    parts = checked_parts(path)
    with open_folder(root, parts[:-1]) as fd:
        os.rename(parts[-1], parts[-1] + OFF_SUFFIX, src_dir_fd=fd, dst_dir_fd=fd)


def _config_switched_off(text: str, lines: list[ConfigLine]) -> str:
    """``text`` with ``lines`` commented out, those still as they were found. (A key under a
    header lmc cannot read is read under the header before it, as it is once that header is
    commented out: no setting changes section by switching off.)"""
    current = {line.lines for line in risky_lines(text)}
    return switched_off(text, [line for line in lines if line.lines in current])


def switch_off(root: str | Path, risks: list[GitRisk]) -> list[str]:
    """Switch ``risks`` off where they are (see the module's docstring); the problems met."""
    base = Path(root).resolve()
    problems: list[str] = []
    by_config: dict[str, list[ConfigLine]] = {}
    for risk in risks:
        if risk.lines:
            by_config.setdefault(risk.path, []).extend(risk.lines)
            continue
        try:
            _rename_off(base, risk.path)
        except (OSError, UnsafePathError) as exc:
            problems.append(f"{name_for_terminal(risk.path)}: {exc}")
    for path, lines in by_config.items():
        try:
            data = read_regular(base, path, _MAX_CONFIG_BYTES) or b""
            text = data[:_MAX_CONFIG_BYTES].decode("utf-8", "surrogateescape")
            info = _lstat(base, path)
            mode = info.st_mode if info is not None else 0o644
            data = _config_switched_off(text, lines).encode("utf-8", "surrogateescape")
            write_regular(base, path, data, mode)
        except (OSError, UnsafePathError) as exc:
            problems.append(f"{name_for_terminal(path)}: {exc}")
    return problems


def risks_note(risks: list[GitRisk], problems: list[str], *, switched: bool) -> str:
    """What the person (and the model) is told."""
    shown = []
    for risk in risks[:10]:
        detail = f" = {risk.detail}" if risk.detail else ""
        shown.append(f"  {name_for_terminal(risk.path)}: {name_for_terminal(risk.what + detail)}")
    if len(risks) > 10:
        shown.append(f"  ... and {len(risks) - 10} more")
    if switched:
        head = (
            "The code set up git to run programs outside the sandbox (at your own next git "
            "command in that folder). lmc switched them off: config lines are commented out "
            f"with '#lmc-off#', hooks and .git files renamed with '{OFF_SUFFIX}'."
        )
    else:
        head = (
            "The code set up git to run programs outside the sandbox (at your own next git "
            "command in that folder); review them before you run git there."
        )
    tail = [f"  could not switch off {problem}" for problem in problems]
    return "\n".join([head, *shown, *tail])
