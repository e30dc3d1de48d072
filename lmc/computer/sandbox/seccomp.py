"""The seccomp filter every sandboxed kernel runs under, built with libseccomp.

It denies (EPERM) what a process without capabilities should never need and what an escape
would: mounting and the new mount API, ``keyctl`` and the key syscalls, ``ptrace`` and
reading other processes' memory, ``bpf``, loading kernel modules, ``kexec``, new namespaces
(``unshare``, ``setns``, ``clone`` with a namespace flag; ``clone3`` answers ENOSYS so that
libc falls back to ``clone``, whose flags a filter can see) and the ``TIOCSTI`` /
``TIOCLINUX`` ioctls that push keystrokes into a terminal. System calls of another
architecture (32-bit calls on x86-64) kill the process, libseccomp's default.

libseccomp's own Python binding (``seccomp``, Debian's python3-seccomp) is used where it can
be imported, else ``pyseccomp`` (the same API over ctypes). The compiled program is built
once per process and handed to bubblewrap (``--seccomp FD``) through a memfd.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["DENIED", "binding", "compiled", "filter_program", "seccomp_fd", "seccomp_problem"]

#: System calls denied outright.
DENIED: Final = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "unshare",
    "setns",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
)

#: clone() flags that make a namespace.
NAMESPACE_FLAGS: Final = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
TIOCSTI: Final = 0x5412
TIOCLINUX: Final = 0x541C

_lock = threading.Lock()
#: The compiled program ("program") or why there is none ("problem"), once built.
_built: dict[str, bytes | str] = {}


#: The libraries pyseccomp looks up by name, as their sonames on Linux.
_SONAMES: Final = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def binding() -> Any:
    """libseccomp's Python binding (``seccomp``, else ``pyseccomp``)."""
    for name in ("seccomp", "pyseccomp"):
        try:
            with _sonames_first():
                return importlib.import_module(name)
        except (ImportError, OSError):  # pyseccomp raises when libseccomp is missing
            continue
    raise ImportError(
        "no libseccomp binding: install libseccomp (Debian: libseccomp2) and `pip install "
        "pyseccomp`, or Debian's python3-seccomp"
    )


def _build() -> bytes:
    lib = binding()
    rules = lib.SyscallFilter(lib.ALLOW)
    deny = lib.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            rules.add_rule(deny, name)
        except (RuntimeError, ValueError, OSError):  # not a syscall on this architecture
            continue
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(deny, "clone", lib.Arg(0, lib.MASKED_EQ, flag, flag))
    for request in (TIOCSTI, TIOCLINUX):
        rules.add_rule(deny, "ioctl", lib.Arg(1, lib.MASKED_EQ, 0xFFFFFFFF, request))
    rules.add_rule(lib.ERRNO(errno.ENOSYS), "clone3")
    return compiled(rules)


def compiled(rules: Any) -> bytes:
    """The BPF program of libseccomp's ``SyscallFilter`` ``rules``, as the kernel loads it."""
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def filter_program() -> bytes | None:
    """The compiled filter (None when no libseccomp binding works here)."""
    with _lock:
        if not _built:
            try:
                _built["program"] = _build()
            except (ImportError, OSError, RuntimeError, ValueError) as exc:
                _built["problem"] = str(exc) or type(exc).__name__
        program = _built.get("program")
        return program if isinstance(program, bytes) else None


def seccomp_problem() -> str | None:
    """Why no filter can be built here (None: it can)."""
    filter_program()
    problem = _built.get("problem")
    return problem if isinstance(problem, str) else None


def seccomp_fd() -> int | None:
    """A fresh readable descriptor holding the filter, for ``bwrap --seccomp FD``."""
    program = filter_program()
    if program is None:
        return None
    fd = os.memfd_create("lmc-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@contextlib.contextmanager
def _sonames_first() -> Iterator[None]:
    """pyseccomp finds libc and libseccomp with ``ctypes.util.find_library``, which runs
    ``ldconfig -p`` for each (a few ms on the first kernel's start): their sonames load
    directly where they are there; anything else is looked up as before."""
    import ctypes
    import ctypes.util

    lookup = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        soname = _SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
            except OSError:
                return lookup(name)
            return soname
        return lookup(name)

    ctypes.util.find_library = find_library
    try:
        yield
    finally:
        ctypes.util.find_library = lookup
