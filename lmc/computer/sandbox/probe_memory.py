"""A bubblewrap probe's success, remembered for this boot.

The probe (:mod:`.detect`) runs bwrap on ``true`` with every namespace a kernel gets: 15-35 ms
and a core of every ``lmc run``'s start, for an answer that changes only when the machine
does. Only success is remembered, under a fingerprint of everything the answer depends on:
the boot, the bwrap binary (path, inode, size, times, mode, owner), lmc's probe command, the
user and groups, the namespaces lmc runs in, the kernel release and the sysctls that allow or
forbid unprivileged namespaces. When any of them differs, the probe runs again.

A wrong memory fails closed: the kernel's start fails (code never runs unsandboxed for it),
and that failure forgets it (:func:`forget`), so the next start probes. The record lives in
lmc's cache directory; it is replaced whole (never written through a planted link) and read
without following links; anything unreadable or unexpected is no memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lmc.paths import cache_dir, private_dir

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


def _record_path() -> Path:
    return cache_dir() / _NAME


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
        "kernel": os.uname().release,
        "sysctls": [_read(path) for path in _SYSCTLS],
    }
    return json.dumps(parts, sort_keys=True)


def remembered(bwrap: str, command: Sequence[str]) -> bool:
    """Whether a probe of ``bwrap`` succeeded on this machine as it is now."""
    wanted = fingerprint(bwrap, command)
    if wanted is None:
        return False
    try:
        fd = os.open(_record_path(), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        try:
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
    if works is None:
        return
    data = json.dumps({"works": works}).encode("utf-8")
    with contextlib.suppress(OSError):
        folder = private_dir(cache_dir())
        fd, name = tempfile.mkstemp(prefix=".sandbox-probe-", dir=folder)
        temporary = Path(name)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            temporary.replace(folder / _NAME)  # replaces a planted link, not its target
        except OSError:
            temporary.unlink(missing_ok=True)


def forget() -> None:
    """Drop the remembered success (a sandboxed kernel failed to start)."""
    with contextlib.suppress(OSError):
        _record_path().unlink(missing_ok=True)
