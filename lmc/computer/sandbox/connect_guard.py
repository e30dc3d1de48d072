"""With the network off, the code's ``connect()`` reaches only sockets in folders it may write.

``connect()`` ignores read-only mounts, so a Unix socket a host program binds *after* a kernel
started, in a folder the sandbox shows read-only (``/var/tmp``, a folder in the home folder),
would be reachable: :mod:`.masks` can only cover the sockets that exist at the start. So every
``connect`` of a sandbox without network is handed to lmc (a seccomp user notification: the
filter is put on by :mod:`.guard_step` inside the sandbox, its listener sent out), and a thread
here does each one on the code's behalf:

- the socket is copied out of the process (``pidfd_getfd``) and the address read from its
  memory (``process_vm_readv``), both checked to be the waiting process's
  (``SECCOMP_IOCTL_NOTIF_ID_VALID``); nothing is ever let through with "continue" (the code
  could change the address or swap the descriptor between the look and the call), lmc makes
  the call itself;
- a socket that is not a Unix one (TCP on the session's own loopback) is connected as asked:
  it lives in the sandbox's network namespace, the same as the code's own call would;
- a Unix pathname is resolved inside the sandbox's root (``openat2`` ``RESOLVE_IN_ROOT`` from
  ``/proc/PID/root``; a relative one from its working directory): a socket on a read-only
  mount there is refused with EACCES, one in a folder the code may write (the working
  directory, its private /tmp, the kernel's own folder) is connected through the descriptor
  resolved (``/proc/self/fd/N``), so the socket checked is the socket reached. Abstract
  addresses are per network namespace, which is the sandbox's own.

The same filter refuses what would go around ``connect``: Unix datagram sockets (``sendto``
with an address needs no connect; ``socket``/``socketpair`` of type DGRAM or RAW: EACCES),
io_uring (ENOSYS: its connect is not a system call) and a seccomp listener of the code's own
(EPERM: a newer filter's notification would be answered by the code). Only ``connect`` is
notified, so the round trips of a warm kernel never pass through here.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import queue
import select
import socket
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from lmc.computer.sandbox import notify
from lmc.computer.sandbox.seccomp import binding, compiled

__all__ = ["ConnectGuard", "guard_connects", "guard_problem"]

_SOCKADDR_MAX: Final = 128  # sizeof(struct sockaddr_storage): the kernel's own limit
_DENY: Final = errno.EACCES
_STEP: Final = Path(__file__).with_name("guard_step.py")
#: How long a worker for blocking connects waits for the next one before it ends.
_IDLE_SECONDS: Final = 30.0

_lock = threading.Lock()
_built: dict[str, bytes | str] = {}


def _build() -> bytes:
    lib = binding()
    rules = lib.SyscallFilter(lib.ALLOW)
    rules.add_rule(lib.NOTIFY, "connect")
    for call in ("socket", "socketpair"):
        for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):
            rules.add_rule(
                lib.ERRNO(errno.EACCES),
                call,
                lib.Arg(0, lib.EQ, socket.AF_UNIX),
                lib.Arg(1, lib.MASKED_EQ, 0xF, int(kind)),
            )
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        rules.add_rule(lib.ERRNO(errno.ENOSYS), call)
    # seccomp(SECCOMP_SET_MODE_FILTER, flags with SECCOMP_FILTER_FLAG_NEW_LISTENER)
    rules.add_rule(
        lib.ERRNO(errno.EPERM), "seccomp", lib.Arg(0, lib.EQ, 1), lib.Arg(1, lib.MASKED_EQ, 8, 8)
    )
    return compiled(rules)


def _program() -> bytes | None:
    with _lock:
        if not _built:
            problem = notify.notifications_supported() if sys.platform == "linux" else "not Linux"
            if problem is not None:
                _built["problem"] = problem
            else:
                try:
                    _built["program"] = _build()
                except (ImportError, OSError, RuntimeError, ValueError) as exc:
                    _built["problem"] = str(exc) or type(exc).__name__
        program = _built.get("program")
        return program if isinstance(program, bytes) else None


def guard_connects() -> bool:
    """Whether kernels without network get the guard (tests turn it off to show the gap)."""
    return True


def guard_problem() -> str | None:
    """Why the connect guard cannot run here (None: it can)."""
    _program()
    problem = _built.get("problem")
    return problem if isinstance(problem, str) else None


class ConnectGuard:
    """One kernel's supervisor: the step's argv and descriptors, and the thread that answers."""

    def __init__(self, program: bytes) -> None:
        self._ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._theirs = theirs.detach()
        self._program_fd = os.memfd_create("lmc-connect-guard", os.MFD_CLOEXEC)
        os.write(self._program_fd, program)
        os.lseek(self._program_fd, 0, os.SEEK_SET)
        self._thread = threading.Thread(target=self._serve, name="lmc-connect-guard", daemon=True)
        self._thread.start()

    @classmethod
    def create(cls) -> ConnectGuard | None:
        """A guard for one kernel; None where this machine cannot have one."""
        program = _program()
        return None if program is None else cls(program)

    @property
    def fds(self) -> tuple[int, ...]:
        """What the kernel's process inherits (lmc closes its copies once it started)."""
        return (self._program_fd, self._theirs)

    def readable(self) -> list[Path]:
        """What the sandbox must show for the step to run (lmc may live under /tmp)."""
        return [_STEP.parent, Path(sys.executable).parent]

    def prefix(self, *, in_place: bool = False) -> list[str]:
        """What runs first in the sandbox, before the kernel's argv; ``in_place``: a Python
        kernel script that runs in the step's own process (see :mod:`.guard_step`)."""
        fds = [str(self._program_fd), str(self._theirs)]
        step = [sys.executable, "-I", "-S", str(_STEP)]
        return [*step, *(["--in-place"] if in_place else []), *fds, "--"]

    def _serve(self) -> None:
        try:
            _message, fds, _flags, _address = socket.recv_fds(self._ours, 1, 1)
        except OSError:
            fds = []
        finally:
            self._ours.close()
        if fds:
            _supervise(fds[0])


def _supervise(listener: int) -> None:
    """Answer ``listener``'s notifications until no process is left under its filter."""
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    try:
        while True:
            events = poller.poll()
            if any(
                mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, mask in events
            ):
                return
            try:
                call = notify.receive(listener)
            except OSError:
                continue  # the process was interrupted before it was read: nothing to answer
            _answer(listener, call)
    finally:
        os.close(listener)


def _answer(listener: int, call: notify.Notification) -> None:
    """Do one ``connect`` for the code, or refuse it; never leave it waiting."""
    try:
        _connect_for(listener, call)
    except Exception:  # the code must get an answer whatever went wrong here
        with contextlib.suppress(OSError):
            notify.respond(listener, call.id, error=_DENY)


class _Target:
    """What lmc opened of the waiting process: its pidfd, root, socket, the socket found."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fds: list[int] = []

    def open(self, path: str, flags: int) -> int:
        fd = os.open(f"/proc/{self.pid}/{path}", flags | os.O_CLOEXEC)
        self.fds.append(fd)
        return fd

    def keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _pidfd(pid: int) -> int:
    try:
        return os.pidfd_open(pid, os.O_EXCL)  # PIDFD_THREAD (Linux 6.9): this very thread
    except OSError:
        tgid = _thread_group(pid)
        return os.pidfd_open(tgid)


def _thread_group(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    return pid


def _connect_for(listener: int, call: notify.Notification) -> None:
    fd, pointer, length = call.args[0], call.args[1], call.args[2]
    target = _Target(call.pid)
    handed = False
    try:
        if length > _SOCKADDR_MAX:
            notify.respond(listener, call.id, error=errno.EINVAL)
            return
        try:
            address = notify.read_memory(call.pid, pointer, length)
            pidfd = target.keep(_pidfd(call.pid))
        except OSError as exc:  # a bad pointer (EFAULT), or the process is gone
            if notify.notification_valid(listener, call.id):
                notify.respond(listener, call.id, error=exc.errno or errno.EFAULT)
            return
        if not notify.notification_valid(listener, call.id):
            return  # gone, or another process now has that pid: nothing read is trusted
        try:
            sock = target.keep(notify.pidfd_getfd(pidfd, fd))
            domain = notify.socket_domain(sock)
        except OSError as exc:
            notify.respond(listener, call.id, error=exc.errno or _DENY)
            return
        if domain == socket.AF_UNIX:
            address, error = _unix_address(address, listener, call, target)
            if error:
                notify.respond(listener, call.id, error=error)
                return
        handed = _finish(listener, call.id, sock, address, target)
    finally:
        if not handed:
            target.close()


def _unix_address(
    address: bytes, listener: int, call: notify.Notification, target: _Target
) -> tuple[bytes, int]:
    """The address lmc connects to for a Unix ``address``, or the errno the code gets."""
    family, name = int.from_bytes(address[:2], sys.byteorder), address[2:]
    if family != socket.AF_UNIX or not name or name.startswith(b"\0"):
        # Another family is refused by the kernel itself; unnamed or abstract: the
        # sandbox's own network namespace.
        return address, 0
    path = os.fsdecode(name.split(b"\0", 1)[0])
    root = target.open("root", os.O_PATH | os.O_DIRECTORY)
    cwd = str(Path(f"/proc/{call.pid}/cwd").readlink())
    if not notify.notification_valid(listener, call.id):
        return b"", errno.ESRCH  # gone: the answer goes nowhere
    if not path.startswith("/"):
        if not cwd.startswith("/"):
            return b"", _DENY
        path = str(Path(cwd) / path)
    try:
        found = target.keep(notify.openat2_in_root(root, path))
        mode = os.fstat(found).st_mode
        read_only = os.fstatvfs(found).f_flag & os.ST_RDONLY
    except OSError as exc:
        return b"", exc.errno or _DENY
    if not stat.S_ISSOCK(mode):
        return b"", errno.ECONNREFUSED
    if read_only:
        return b"", _DENY  # a folder the code cannot write: a host program's socket
    via = os.fsencode(f"/proc/self/fd/{found}")
    return address[:2] + via + b"\0", 0


def _finish(listener: int, ident: int, sock: int, address: bytes, target: _Target) -> bool:
    """Connect and answer; a socket that blocks is connected by a worker, which then owns
    ``target`` (True) and a copy of the listener (whose number may be reused once the
    supervisor closed it)."""
    if fcntl.fcntl(sock, fcntl.F_GETFL) & os.O_NONBLOCK:
        _respond(listener, ident, notify.connect_raw(sock, address))
        return False
    own = target.keep(os.dup(listener))

    def run() -> None:
        try:
            _respond(own, ident, notify.connect_raw(sock, address))
        finally:
            target.close()

    _workers.submit(run)
    return True


class _Workers:
    """Threads for connects that may block (a full backlog), reused: one is started only
    when none is idle, and an idle one ends after a while."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name="lmc-connect-guard-call", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0 and self._jobs.empty():
                        self._idle -= 1
                        return
                continue
            with contextlib.suppress(Exception):
                job()
            with self._lock:
                self._idle += 1


_workers = _Workers()


def _respond(listener: int, ident: int, error: int) -> None:
    with contextlib.suppress(OSError):
        notify.respond(listener, ident, error=error)
