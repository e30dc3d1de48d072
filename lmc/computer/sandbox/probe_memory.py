"""A bubblewrap probe's success, remembered for this boot.

The probe (:mod:`.detect`) runs bwrap on ``true`` with every namespace a kernel gets: 15-35 ms
and a core of every ``lmc run``'s start, for an answer that changes only when the machine
does. Only success is remembered, under a fingerprint of everything the answer depends on:
the boot, the bwrap binary (path, inode, size, times, mode, owner), lmc's probe command, the
user and groups, the namespaces lmc runs in, how lmc itself is confined (seccomp, no_new_privs,
capabilities, its security label: a service may forbid namespaces that a login shell has), the
kernel release and the sysctls that allow or forbid unprivileged namespaces. When any of them
differs, the probe runs again.

A wrong memory fails closed: the kernel's start fails (code never runs unsandboxed for it),
and that failure forgets it (:func:`forget`), so the next start probes. The record lives in
lmc's cache directory, only while that is a real folder of the person's own (a link there is
neither read nor written through); the record is replaced whole (a planted link is replaced,
not written through) and read only when it is a regular file of theirs (never a FIFO that
would block the start); anything unreadable or unexpected is no memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lmc.paths import cache_dir

__all__ = ["fingerprint", "forget", "remember", "remembered"]

_NAME: Final = "sandbox-probe.json"
#: A record is a few hundred bytes; a bigger file is not one of lmc's.
_MAX_SIZE: Final = 8192
_BOOT_ID: Final = "/proc/sys/kernel/random/boot_id"
#: Sysctls that allow or forbid what the probe does (absent ones read as None).
_SYSCTLS: Final = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/user/max_net_namespaces",
    "/proc/sys/user/max_pid_namespaces",
    "/proc/sys/user/max_ipc_namespaces",
    "/proc/sys/user/max_uts_namespaces",
    "/proc/sys/user/max_cgroup_namespaces",
)
_NAMESPACES: Final = ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup")
#: How lmc's own process is confined (``/proc/self/status`` fields).
_CONFINEMENT: Final = ("Seccomp", "NoNewPrivs", "CapEff", "CapPrm", "CapBnd")
#: A temporary record older than this was left by an lmc killed while writing it.
_STALE_SECONDS: Final = 60.0


def _own_folder() -> Path | None:
    """lmc's cache folder when it is a real folder of this user's (None: missing, a link,
    someone else's, or no home to find it in)."""
    try:
        folder = cache_dir()
        info = os.lstat(folder)
    except (OSError, RuntimeError):
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return None
    return folder


def _made_own_folder() -> Path | None:
    """:func:`_own_folder`, made (0700) when it is missing; never through a link."""
    folder = _own_folder()
    if folder is not None:
        return folder
    with contextlib.suppress(OSError, RuntimeError):
        wanted = cache_dir()
        wanted.parent.mkdir(parents=True, exist_ok=True)
        wanted.mkdir(mode=0o700)  # not exist_ok: whatever is there already is looked at below
    return _own_folder()


def _confinement() -> list[str]:
    """The confinement lines of ``/proc/self/status`` and the security label."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        status = ""
    lines = [line for line in status.splitlines() if line.split(":", 1)[0] in _CONFINEMENT]
    return [*lines, _read("/proc/self/attr/current") or ""]


def _read(path: str) -> str | None:
    try:
        with Path(path).open(encoding="ascii", errors="replace") as file:
            return file.read(256).strip()
    except OSError:
        return None


def fingerprint(bwrap: str, command: Sequence[str]) -> str | None:
    """What the probe's answer for ``bwrap`` depends on, as one string (None: unknown)."""
    boot = _read(_BOOT_ID)
    try:
        info = Path(bwrap).stat()
        namespaces = [str(Path(f"/proc/self/ns/{name}").readlink()) for name in _NAMESPACES]
    except OSError:
        return None
    if not boot:
        return None
    parts = {
        "boot": boot,
        "bwrap": [bwrap, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns],
        "bwrap_mode": [info.st_mode, info.st_uid, info.st_gid, info.st_ctime_ns],
        "command": list(command),
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "namespaces": namespaces,
        "confinement": _confinement(),
        "kernel": os.uname().release,
        "sysctls": [_read(path) for path in _SYSCTLS],
    }
    return json.dumps(parts, sort_keys=True)


def remembered(bwrap: str, command: Sequence[str]) -> bool:
    """Whether a probe of ``bwrap`` succeeded on this machine as it is now."""
    wanted = fingerprint(bwrap, command)
    folder = _own_folder()
    if wanted is None or folder is None:
        return False
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO must not block
    try:
        fd = os.open(folder / _NAME, flags)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                return False
            data = file.read(_MAX_SIZE + 1)
        except OSError:
            return False
    if len(data) > _MAX_SIZE:
        return False
    try:
        record = json.loads(data.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError too
        return False
    return isinstance(record, dict) and record.get("works") == wanted


def remember(bwrap: str, command: Sequence[str]) -> None:
    """Keep a successful probe of ``bwrap`` for the next lmc (quietly nothing on failure)."""
    works = fingerprint(bwrap, command)
    folder = _made_own_folder()
    if works is None or folder is None:
        return
    data = json.dumps({"works": works}).encode("utf-8")
    with contextlib.suppress(OSError):
        fd, name = tempfile.mkstemp(prefix=".sandbox-probe-", dir=folder)
        temporary = Path(name)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            temporary.replace(folder / _NAME)  # replaces a planted link, not its target
        except OSError:
            temporary.unlink(missing_ok=True)
    _remove_stale_temporaries(folder)


def _remove_stale_temporaries(folder: Path) -> None:
    """Records half written by an lmc that was killed meanwhile (a minute old or more)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(".sandbox-probe-"):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > _STALE_SECONDS:
                        Path(entry.path).unlink()


def forget() -> None:
    """Drop the remembered success (a sandboxed kernel failed to start)."""
    folder = _own_folder()
    if folder is not None:
        with contextlib.suppress(OSError):
            (folder / _NAME).unlink(missing_ok=True)
