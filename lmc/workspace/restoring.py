"""Putting a snapshot's files back without following a link out of the working directory.

The working directory is the model's: between the snapshot an undo compares with and the
write, a folder may have become a link to ``~/.ssh``. Every removal, write and chmod here goes
through :mod:`lmc.workspace.untrusted` (directory descriptors, ``O_NOFOLLOW``, every parent
checked again), so such a path is refused and said so, never written through. Files are
written from the shadow's blobs by lmc itself rather than by ``git checkout-index``, which
checks leading folders with ``lstat`` and then writes by path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from lmc.messages.sanitize import name_for_terminal
from lmc.workspace.untrusted import (
    UnsafePathError,
    chmod_regular,
    remove_empty_folders,
    remove_file,
    write_link,
    write_regular,
)

__all__ = ["Entry", "remove_paths", "set_modes", "tree_entries", "write_entries"]

#: Blobs read from git per ``cat-file --batch`` (each at most the snapshot's file cap).
_BATCH: Final = 64
_LINK: Final = b"120000"
_GITLINK: Final = b"160000"

#: One file a tree records: (path, git mode, blob id).
Entry = tuple[str, bytes, str]
Git = Callable[..., bytes]


def _why(path: str, error: OSError | UnsafePathError, verb: str) -> str:
    reason = str(error) if isinstance(error, UnsafePathError) else error.strerror or str(error)
    return f"{name_for_terminal(path)}: not {verb}: {reason}"


def default_perm(exec_bit: bool) -> int:
    return 0o755 if exec_bit else 0o644


def remove_paths(root: str, paths: Sequence[str], problems: list[str]) -> list[str]:
    """Remove files and links (never folders, never through a link); empty parents go too.
    Returns the paths that are gone."""
    done: list[str] = []
    for path in paths:
        try:
            remove_file(root, path)
        except (OSError, UnsafePathError) as error:
            problems.append(_why(path, error, "removed"))
            continue
        done.append(path)
        remove_empty_folders(root, path)
    return done


def tree_entries(git: Git, tree: str, paths: Sequence[str]) -> list[Entry]:
    """The entries of ``tree`` for ``paths`` (ls-tree of the whole tree, filtered)."""
    wanted = set(paths)
    out: list[Entry] = []
    for record in git("ls-tree", "-r", "-z", "--full-tree", tree).split(b"\0"):
        meta, _, name = record.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        if path in wanted:
            mode, _kind, blob = meta.split()
            out.append((path, mode, blob.decode()))
    return out


def _blobs(git: Git, ids: Sequence[str]) -> Iterator[bytes]:
    """The contents of blobs, in order (``cat-file --batch``)."""
    data = git("cat-file", "--batch", data="".join(f"{i}\n" for i in ids).encode())
    at = 0
    for _ in ids:
        end = data.index(b"\n", at)
        size = int(data[at:end].split()[2])
        yield data[end + 1 : end + 1 + size]
        at = end + 1 + size + 1


def write_entries(
    git: Git, root: str, entries: Sequence[Entry], modes: dict[str, int], problems: list[str]
) -> list[str]:
    """Write the entries' files and links under ``root``; the paths written."""
    written: list[str] = []
    for start in range(0, len(entries), _BATCH):
        batch = [e for e in entries[start : start + _BATCH] if e[1] != _GITLINK]
        for (path, mode, _blob), data in zip(
            batch, _blobs(git, [e[2] for e in batch]), strict=True
        ):
            try:
                if mode == _LINK:
                    write_link(root, path, os.fsdecode(data))
                else:
                    perm = modes.get(path, default_perm(mode == b"100755"))
                    write_regular(root, path, data, perm)
            except (OSError, UnsafePathError) as error:
                problems.append(_why(path, error, "restored"))
                continue
            written.append(path)
    return written


def set_modes(
    root: str, recorded: dict[str, int], paths: Sequence[str], problems: list[str]
) -> list[str]:
    """Give regular files the bits the snapshot recorded (git's default for the others).
    Returns the paths that have them now."""
    done: list[str] = []
    for path in paths:
        wanted = recorded.get(path)
        try:
            if wanted is None:
                chmod_regular(root, path, lambda now: default_perm(bool(now & 0o100)))
            else:
                chmod_regular(root, path, wanted)
        except (OSError, UnsafePathError) as error:
            problems.append(_why(path, error, "given its permissions"))
            continue
        done.append(path)
    return done
