"""Helpers for tests of checkpoints: git in a project, and what a project's files and .git hold."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

__all__ = ["files_of", "git", "git_state"]


def git(project: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x",
           "GIT_COMMITTER_NAME": "p", "GIT_COMMITTER_EMAIL": "p@x"}  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=project, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` but .git: its bytes and its mode (links: their target)."""
    out: dict[str, tuple[bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        info = path.lstat()
        if path.is_symlink():
            out[rel] = (os.readlink(path).encode(), info.st_mode)
        elif path.is_file():
            out[rel] = (path.read_bytes(), info.st_mode)
    return out


def git_state(project: Path) -> str:
    """A digest of everything in the project's .git (refs, index, HEAD, stash, objects)."""
    digest = hashlib.sha256()
    for path in sorted((project / ".git").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(project)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def empty(folder: Path) -> None:
    """Remove everything in ``folder`` (links themselves, never what they point at)."""
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
