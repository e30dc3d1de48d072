"""Where kernels' connection files, logs and sockets live: one folder per lmc session.

All of one user's sessions share a root, ``<temp>/lmc-<uid>`` (0700), holding a folder per
session (``s-*``) with a lock the session holds while it lives. The sandbox covers the whole
root and binds back only the kernel's own folder, so code never sees another session's
connection files (their HMAC keys and sockets), wherever the temporary directory is. A
session killed outright (SIGKILL) leaves its folder behind; its lock is gone with it, and
the next lmc to start removes the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from lmc.errors import ComputerError

if TYPE_CHECKING:
    from lmc.computer.kernel_events import Kernel

__all__ = [
    "default_runtime_dir",
    "release_runtime_dir",
    "remove_stale_sessions",
    "runtime_root",
    "shutdown_all",
]

#: Longest Unix socket path (sun_path holds 108 bytes on Linux, 104 on macOS), with a margin.
_SOCKET_PATH_MAX: Final = 100
#: What lmc adds below the temporary directory: its root, a session, a kernel's dir, a socket.
_SOCKET_NAME_ROOM: Final = len("/lmc-4294967295/s-xxxxxxxx/k-xxxxxxxxxxxx-xxxxxxxx/s-65535")
#: A session folder without a lock this old was left half made.
_UNLOCKED_GRACE: Final = 60.0

_locks: dict[Path, int] = {}
_locks_guard = threading.Lock()


def _base() -> str:
    base = tempfile.gettempdir()
    if os.name == "posix" and len(base) + _SOCKET_NAME_ROOM > _SOCKET_PATH_MAX:
        fitting = [
            candidate
            for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/tmp")
            if candidate
            and len(candidate) + _SOCKET_NAME_ROOM <= _SOCKET_PATH_MAX
            and os.access(candidate, os.W_OK | os.X_OK)
        ]
        if not fitting:
            raise ComputerError(
                f"the temporary directory {base} is too long a path for the kernels' sockets",
                hint="set TMPDIR to a shorter directory",
            )
        base = fitting[0]
    return base


def _own_private_dir(path: Path) -> bool:
    """``path`` is a real folder of ours that nobody else can enter."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return True


def runtime_root() -> Path:
    """This user's root of session folders (made 0700 when missing)."""
    root = Path(_base()) / f"lmc-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    if not _own_private_dir(root):
        raise ComputerError(
            f"{root} is not a private folder of yours (another user may have made it)",
            hint="remove it, or set TMPDIR to a private directory",
        )
    return root


def _stale(session: Path) -> bool:
    lock = session / "lock"
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            return time.time() - session.stat().st_mtime > _UNLOCKED_GRACE
        return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its session holds it: alive
    finally:
        os.close(fd)
    return True


def remove_stale_sessions(root: Path) -> list[Path]:
    """Remove the folders of sessions that are gone; return them."""
    removed = []
    with contextlib.suppress(OSError):
        for session in root.iterdir():
            if session.name.startswith("s-") and session not in _locks and _stale(session):
                shutil.rmtree(session, ignore_errors=True)
                removed.append(session)
    return removed


def default_runtime_dir() -> Path:
    """A fresh private folder for this session's connection files, logs and sockets."""
    root = runtime_root()
    remove_stale_sessions(root)
    try:
        session = Path(tempfile.mkdtemp(prefix="s-", dir=root))
    except FileNotFoundError:  # the last other session removed the empty root just now
        root = runtime_root()
        session = Path(tempfile.mkdtemp(prefix="s-", dir=root))
    fd = os.open(session / "lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    with _locks_guard:
        _locks[session] = fd
    return session


def release_runtime_dir(session: Path) -> None:
    """Remove this session's folder and let go of its lock; the root too when no other
    session uses it (nothing of lmc's is left in the temporary directory)."""
    shutil.rmtree(session, ignore_errors=True)
    with _locks_guard:
        fd = _locks.pop(session, None)
    if fd is not None:
        os.close(fd)
    with contextlib.suppress(OSError):  # not empty: another session lives on
        session.parent.rmdir()


def shutdown_all(sessions: Mapping[str, Kernel], runtime_dir: Path | None) -> None:
    """Shut kernels down in parallel (each may wait a moment for a clean exit)."""
    threads = []
    for session in list(sessions.values()):
        thread = threading.Thread(target=session.shutdown, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # interpreter shutdown: no new threads, so one at a time
            session.shutdown()
            continue
        threads.append(thread)
    for thread in threads:
        thread.join()
    if runtime_dir is not None:
        release_runtime_dir(runtime_dir)
