"""Reading and writing inside the working directory without following links out of it.

lmc's own process runs with the person's full rights, outside the sandbox, and the working
directory is the model's: any name in it may be a symbolic link to ``~/.ssh/id_rsa``, any
folder may be swapped for a link between two calls, and any file may be a sparse giant or a
FIFO. Every host-side reader and writer of the working directory (AGENTS.md, undo,
apply_patch) goes through here: paths are walked one component at a time from a directory
file descriptor with ``O_NOFOLLOW``, so a link anywhere on the way is refused rather than
followed, only regular files are read, and never more than a cap.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Final

from lmc.errors import WorkspaceError
from lmc.messages.sanitize import name_for_terminal

__all__ = [
    "UnsafePathError",
    "checked_parts",
    "chmod_regular",
    "open_folder",
    "read_regular",
    "remove_empty_folders",
    "remove_file",
    "write_link",
    "write_regular",
]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafePathError(WorkspaceError):
    """A path that leaves the working directory, or goes through a link or a non-folder."""


def checked_parts(relative: str | PurePosixPath) -> tuple[str, ...]:
    """The components of a relative path, refusing absolute paths, ``..`` and empty names."""
    text = str(relative)
    if not text or text.startswith("/") or "\x00" in text:
        raise UnsafePathError(f"not a path inside the working directory: {text!r}")
    parts = tuple(part for part in text.split("/") if part not in ("", "."))
    if not parts or ".." in parts:
        raise UnsafePathError(f"not a path inside the working directory: {text!r}")
    return parts


def _open_child_folder(parent: int, name: str, *, create: bool, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
        return _open_child_folder(parent, name, create=False, shown=shown)
    except (NotADirectoryError, OSError) as error:
        if isinstance(error, FileNotFoundError | PermissionError):
            raise
        where = f"{name_for_terminal(shown)}: {name_for_terminal(name)}"
        raise UnsafePathError(f"{where} is a link or not a folder") from None


@contextlib.contextmanager
def open_folder(root: str | Path, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``root/parts...``, every step taken without following a link.

    ``root`` itself is trusted (the person chose it). With ``create`` missing folders are
    made on the way. The descriptor is closed when the block ends.
    """
    shown = "/".join(parts) or "."
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts:
            child = _open_child_folder(fd, name, create=create, shown=shown)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def read_regular(root: str | Path, relative: str | PurePosixPath, max_bytes: int) -> bytes | None:
    """At most ``max_bytes`` of a regular file inside ``root``; None when there is none.

    A link (anywhere on the path), a folder, a FIFO or a device is refused with
    :class:`UnsafePathError`; a missing file is None. Reads no more than the cap (one
    byte more, so the caller can tell the file was longer: ``len(result) > max_bytes``).
    """
    parts = checked_parts(relative)
    try:
        with open_folder(root, parts[:-1]) as folder:
            fd = os.open(parts[-1], _READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UnsafePathError(
            f"{name_for_terminal(str(relative))}: {error.strerror or error}"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(f"{name_for_terminal(str(relative))}: not a regular file")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            data = os.read(fd, min(left, 1 << 20))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _temporary_name() -> str:
    """A fresh name for a file written then renamed (short: the real name may be 255 bytes)."""
    return f".lmc-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def write_regular(
    root: str | Path, relative: str | PurePosixPath, data: bytes, mode: int | None = None
) -> None:
    """Write ``data`` to ``root/relative`` atomically, replacing (never following) a link.

    Missing folders are made; the file is written under a temporary name in its folder
    and renamed over the old name, so a link there is replaced, not written through.
    """
    parts = checked_parts(relative)
    temporary = _temporary_name()
    with open_folder(root, parts[:-1], create=True) as folder:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o666, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb", closefd=True) as handle:
                handle.write(data)
                if mode is not None:
                    os.fchmod(handle.fileno(), stat.S_IMODE(mode))
            os.replace(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise


def write_link(root: str | Path, relative: str | PurePosixPath, target: str) -> None:
    """Make ``root/relative`` a symbolic link to ``target`` (replacing what is there)."""
    parts = checked_parts(relative)
    temporary = _temporary_name()
    with open_folder(root, parts[:-1], create=True) as folder:
        os.symlink(target, temporary, dir_fd=folder)
        try:
            os.replace(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise


def remove_file(root: str | Path, relative: str | PurePosixPath) -> bool:
    """Remove a file (or a link itself, never its target) inside ``root``; False if absent.

    A folder is left alone (False): it may be an embedded repository, never ours to delete.
    """
    parts = checked_parts(relative)
    try:
        with open_folder(root, parts[:-1]) as folder:
            if stat.S_ISDIR(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode):
                return False
            os.unlink(parts[-1], dir_fd=folder)
    except FileNotFoundError:
        return False
    return True


def remove_empty_folders(root: str | Path, relative: str | PurePosixPath) -> None:
    """Remove the folders above ``relative`` that are now empty, the deepest first."""
    parts = checked_parts(relative)[:-1]
    while parts:
        try:
            with open_folder(root, parts[:-1]) as folder:
                os.rmdir(parts[-1], dir_fd=folder)  # rmdir never follows a link: ENOTDIR
        except (OSError, UnsafePathError):
            return
        parts = parts[:-1]


def chmod_regular(
    root: str | Path, relative: str | PurePosixPath, mode: int | Callable[[int], int]
) -> bool:
    """Set the permission bits of a regular file inside ``root``; False when there is none.

    ``mode`` may be a function of the file's current bits (git's default for its exec bit).

    The name is opened with ``O_PATH | O_NOFOLLOW`` (a link gives the link itself, nothing
    is read, a device is not opened) and, when it is a regular file, changed through that
    descriptor's own inode (``/proc/self/fd/N``, as glibc's ``fchmodat`` does): a link is
    never followed and a folder swapped on the way is refused.
    """
    parts = checked_parts(relative)
    try:
        with open_folder(root, parts[:-1]) as folder:
            fd = os.open(parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return False
        wanted = stat.S_IMODE(mode(info.st_mode) if callable(mode) else mode)
        if stat.S_IMODE(info.st_mode) != wanted:
            Path(f"/proc/self/fd/{fd}").chmod(wanted)  # the inode the descriptor holds
        return True
    finally:
        os.close(fd)
