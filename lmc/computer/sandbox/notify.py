"""The Linux calls a seccomp user-notification supervisor needs, over ctypes.

Python has no binding for them: the ``SECCOMP_IOCTL_NOTIF_*`` ioctls on a listener (the
structures of ``include/uapi/linux/seccomp.h``), ``pidfd_getfd`` (a copy of another process's
descriptor, Linux 5.6), ``openat2`` with ``RESOLVE_IN_ROOT`` (a path resolved as if the
directory were ``/``, Linux 5.6), ``process_vm_readv`` and a ``connect`` that takes the raw
address bytes. Calls go
through ``ctypes.CDLL`` (which lets go of the GIL), so a call that blocks stops one thread only.
The ioctl numbers and system call numbers are the same on x86-64 and arm64 (the generic
ioctl encoding; 434-438 are in the unified table).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from dataclasses import dataclass
from typing import Final

__all__ = [
    "Notification",
    "connect_raw",
    "notification_valid",
    "notifications_supported",
    "openat2_in_root",
    "pidfd_getfd",
    "read_memory",
    "receive",
    "respond",
    "socket_domain",
]

_NOTIF_RECV: Final = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif), 80 bytes
_NOTIF_SEND: Final = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp), 24 bytes
_NOTIF_ID_VALID: Final = 0x40082102  # _IOW('!', 2, __u64)
_NOTIF: Final = struct.Struct("=QII iIQ 6Q")  # id, pid, flags; nr, arch, ip, args
_RESPONSE: Final = struct.Struct("=Qqii")  # id, val, error, flags
_SYS_OPENAT2: Final = 437
_SYS_PIDFD_GETFD: Final = 438
_SYS_SECCOMP: Final = {"x86_64": 317, "aarch64": 277}
_SECCOMP_GET_ACTION_AVAIL: Final = 2
_SECCOMP_RET_USER_NOTIF: Final = 0x7FC00000
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_IN_ROOT: Final = 0x10
_SOL_SOCKET: Final = 1
_SO_DOMAIN: Final = 39

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)
_libc.connect.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
_libc.getsockopt.argtypes = (
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint),
)
if sys.platform.startswith("linux"):  # lmc doctor imports this on macOS too
    _libc.process_vm_readv.restype = ctypes.c_ssize_t


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


@dataclass(frozen=True)
class Notification:
    """One system call a filtered process is waiting in: ``pid`` as lmc sees it."""

    id: int
    pid: int
    nr: int
    args: tuple[int, ...]


def _raise() -> None:
    number = ctypes.get_errno()
    raise OSError(number, os.strerror(number))


def receive(listener: int) -> Notification:
    """The next notification (blocks until there is one)."""
    buffer = ctypes.create_string_buffer(_NOTIF.size)  # zeroed, as the kernel insists
    if _libc.ioctl(listener, _NOTIF_RECV, buffer) != 0:
        _raise()
    ident, pid, _flags, nr, _arch, _ip, *args = _NOTIF.unpack(buffer.raw)
    return Notification(ident, pid, nr, tuple(args))


def respond(listener: int, ident: int, *, value: int = 0, error: int = 0) -> None:
    """Answer notification ``ident``: the call returns ``value``, or fails with ``error``
    (a positive errno). A notification whose process has moved on is ignored."""
    buffer = ctypes.create_string_buffer(_RESPONSE.pack(ident, value, -error, 0), _RESPONSE.size)
    if _libc.ioctl(listener, _NOTIF_SEND, buffer) != 0 and ctypes.get_errno() != errno.ENOENT:
        _raise()


def notification_valid(listener: int, ident: int) -> bool:
    """Is the process still waiting in ``ident``? (What was opened from its pid before this
    call is then known to be that process's.)"""
    value = ctypes.c_uint64(ident)
    return bool(_libc.ioctl(listener, _NOTIF_ID_VALID, ctypes.byref(value)) == 0)


def pidfd_getfd(pidfd: int, target: int) -> int:
    """A copy (close-on-exec) of descriptor ``target`` of the process behind ``pidfd``."""
    fd = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, target, 0)
    if fd < 0:
        _raise()
    return int(fd)


def openat2_in_root(root: int, path: str) -> int:
    """An ``O_PATH`` descriptor of ``path`` resolved with ``root`` as ``/`` (``..`` and
    absolute links stay inside it), no ``/proc`` magic links followed."""
    how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, _RESOLVE_IN_ROOT | _RESOLVE_NO_MAGICLINKS)
    relative = path.lstrip("/") or "."
    fd = _libc.syscall(_SYS_OPENAT2, root, relative.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        _raise()
    return int(fd)


class _IoVec(ctypes.Structure):
    _fields_ = (("base", ctypes.c_void_p), ("len", ctypes.c_size_t))


def read_memory(pid: int, address: int, length: int) -> bytes:
    """``length`` bytes at ``address`` in process ``pid`` (``process_vm_readv``: a ptrace
    check only, where ``/proc/PID/mem`` of a process that made itself non-dumpable is owned
    by root and closed to a normal user)."""
    if length == 0:
        return b""
    buffer = ctypes.create_string_buffer(length)
    local = _IoVec(ctypes.cast(buffer, ctypes.c_void_p), length)
    remote = _IoVec(address, length)
    done = _libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if done < 0:
        _raise()
    if done != length:
        raise OSError(errno.EFAULT, "the address is not all readable")
    return buffer.raw


def connect_raw(fd: int, address: bytes) -> int:
    """``connect(fd, address)``: 0, or the positive errno it failed with."""
    if _libc.connect(fd, address, len(address)) == 0:
        return 0
    return ctypes.get_errno()


def socket_domain(fd: int) -> int:
    """The address family of socket ``fd`` (OSError ENOTSOCK for another kind of file)."""
    value, size = ctypes.c_int(0), ctypes.c_uint(ctypes.sizeof(ctypes.c_int))
    if _libc.getsockopt(fd, _SOL_SOCKET, _SO_DOMAIN, ctypes.byref(value), ctypes.byref(size)):
        _raise()
    return value.value


def notifications_supported() -> str | None:
    """Why this kernel cannot run the supervisor (None: it can): user notifications,
    ``pidfd_getfd`` and ``openat2`` must all be there."""
    number = _SYS_SECCOMP.get(os.uname().machine)
    if number is None:
        return f"no seccomp system call number known for {os.uname().machine}"
    action = ctypes.c_uint32(_SECCOMP_RET_USER_NOTIF)
    if _libc.syscall(number, _SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action)) != 0:
        return "this Linux has no seccomp user notifications (5.0 or later has)"
    for name, call in (("pidfd_getfd", _SYS_PIDFD_GETFD), ("openat2", _SYS_OPENAT2)):
        if _libc.syscall(call, -1, 0, 0, 0) == -1 and ctypes.get_errno() == errno.ENOSYS:
            return f"this Linux has no {name} (5.6 or later has)"
    return None
