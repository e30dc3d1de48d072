"""A block's stdin: a pipe the kernel holds, at end-of-input while the block is in the foreground.

Why a pipe and not /dev/null: a block that runs past lmc's ``block_timeout`` goes on as a job,
and the model may then answer the program that waits for input (``read -p "Continue?"``) or
close its input (``cat``). So each block reads a FIFO of its own (in the kernel's private block
folder) whose only writer is this kernel, which keeps it open.

While the block is in the foreground nobody types into it, and a program that reads it would
wait for good; so, only while a block runs and never between blocks, :meth:`BlockInput.check`
looks every :data:`CHECK_INTERVAL` seconds at what the block's processes are blocked in
(Linux ``/proc/PID/syscall``): one blocked in ``read`` on this FIFO, or in ``epoll_wait`` on a
set that holds it (node's ``process.stdin``), gets end-of-input (the kernel closes its end)
and the model is told it asked for keyboard input, as before. Once lmc
says the block is a job (``keep``), the checks stop and ``write``/``eof`` reach the program.

Where ``/proc/PID/syscall`` cannot be read or the read system calls of the machine are not
known here, :func:`supported` is False and blocks read /dev/null as they always did.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

__all__ = ["CHECK_INTERVAL", "BlockInput", "hint", "supported"]

#: Seconds between two looks at what a foreground block's processes wait for.
CHECK_INTERVAL = 0.1
#: The system calls that read one fd given as their first argument, by machine.
READ_CALLS = {
    "x86_64": {0, 17, 19, 295, 327},  # read, pread64, readv, preadv, preadv2
    "aarch64": {63, 65, 67, 69, 286},
}


#: The system calls that wait on an epoll instance given as their first argument.
EPOLL_CALLS = {
    "x86_64": {232, 281, 441},  # epoll_wait, epoll_pwait, epoll_pwait2
    "aarch64": {22, 441},  # epoll_pwait, epoll_pwait2
}


def supported() -> bool:
    """Whether this system shows what a process is blocked in (Linux, a known machine)."""
    if not sys.platform.startswith("linux") or os.uname().machine not in READ_CALLS:
        return False
    try:
        with open("/proc/self/syscall", "rb") as file:
            return bool(file.read().split())
    except OSError:
        return False


def hint(program: str) -> str:
    """What the model is told when a foreground block's program got end-of-input."""
    return (
        f"lmc: this code asked for keyboard input ({program}), which lmc cannot give it, so "
        "it got end of input; put the values in the code instead (answer=y, or pipe them in: "
        "echo y | ...).\n"
    )


class BlockInput:
    """The FIFO of a block: created before it, closed and removed after it (or, still open
    and never written to, read by the next block too: :attr:`reusable`).

    The main thread creates, checks and ends it; the control thread writes, closes it or
    marks it kept; one lock keeps them apart.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        os.mkfifo(path, 0o600)
        # Read-write: opening never waits for a reader, and bash's read-only open never
        # waits for a writer. The kernel never reads it.
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        stat = os.fstat(self._fd)
        self._identity = (stat.st_dev, stat.st_ino)
        self._lock = threading.Lock()
        self._kept = False
        self._closed_by: str | None = None  # who closed it: "lmc" (foreground) or "eof"
        self._next_check = time.monotonic() + CHECK_INTERVAL

    @property
    def reusable(self) -> bool:
        """Whether the next block may read this FIFO too: open, and never a job's."""
        return self._fd is not None and not self._kept

    def in_place(self) -> bool:
        """Whether its path still names this FIFO (a restarted shell's folder is new)."""
        try:
            stat = os.stat(self.path)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity

    def rearm(self) -> None:
        """Start watching again, for the next block (main thread, between blocks)."""
        self._next_check = time.monotonic() + CHECK_INTERVAL

    @property
    def watching(self) -> bool:
        """Whether the foreground checks still run (open, not a job yet)."""
        return self._fd is not None and not self._kept

    def due_in(self) -> float:
        """Seconds until the next check is due."""
        return max(0.0, self._next_check - time.monotonic())

    def check(self, root: int) -> str | None:
        """If due: the name of a program of ``root``'s tree blocked reading this FIFO (or
        waiting on it with epoll); None otherwise. :meth:`give_eof` then closes it."""
        if not self.watching or time.monotonic() < self._next_check:
            return None
        self._next_check = time.monotonic() + CHECK_INTERVAL
        return self._blocked_reader(root)

    def give_eof(self) -> bool:
        """Close it for the foreground block's readers (end-of-input for all of them);
        False when lmc made the block a job meanwhile."""
        with self._lock:
            if self._kept or self._fd is None:
                return False
            self._close("lmc")
            return True

    def request(self, action: str, text: str) -> tuple[bool, str]:
        """A request of lmc's (control thread): ``keep``, ``write`` or ``eof``; whether it
        was done, and what happened in words."""
        with self._lock:
            if action == "keep":
                self._kept = True
                if self._fd is None:
                    return False, self._why_closed()
                return True, "kept"
            if self._fd is None:
                return False, self._why_closed()
            if action == "eof":
                self._close("eof")
                return True, "its input is closed (end of input)"
            return self._write(text.encode("utf-8"))

    def end(self) -> None:
        """The block is over: close and remove the FIFO."""
        with self._lock:
            self._close(self._closed_by or "end")
            self._kept = True
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def _write(self, data: bytes) -> tuple[bool, str]:
        assert self._fd is not None
        written = 0
        while written < len(data):
            try:
                written += os.write(self._fd, data[written:])
            except BlockingIOError:
                return False, (
                    f"only {written} of {len(data)} bytes were sent: the program has not "
                    "read its earlier input yet"
                )
        return True, f"{written} bytes sent"

    def _close(self, by: str) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self._closed_by = by

    def _why_closed(self) -> str:
        if self._closed_by == "lmc":
            return (
                "its input was already closed: it read its input before it became a job, "
                "and got end of input then"
            )
        if self._closed_by == "eof":
            return "its input was already closed (end of input was sent)"
        return "the block is over"

    def _blocked_reader(self, root: int) -> str | None:
        machine = os.uname().machine
        reads = READ_CALLS.get(machine, set())
        waits = EPOLL_CALLS.get(machine, set())
        for pid in _tree(root):
            try:
                with open(f"/proc/{pid}/syscall", "rb") as file:
                    fields = file.read().split()
                if len(fields) < 2 or not fields[0].isdigit():
                    continue
                call, fd = int(fields[0]), int(fields[1], 16)
                if call in reads:
                    fds = [fd]
                elif call in waits:  # what the epoll set watches (node's process.stdin)
                    fds = _epoll_targets(pid, fd)
                else:
                    continue
                if any(self._is_this(pid, target) for target in fds):
                    return _program(pid, root)
            except (OSError, ValueError):
                continue
        return None

    def _is_this(self, pid: int, fd: int) -> bool:
        try:
            stat = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity


def _epoll_targets(pid: int, epoll_fd: int) -> list[int]:
    """The fds epoll instance ``epoll_fd`` of ``pid`` watches (its fdinfo's ``tfd:`` lines)."""
    with open(f"/proc/{pid}/fdinfo/{epoll_fd}", "rb") as file:
        lines = file.read().splitlines()
    return [int(line.split()[1]) for line in lines if line.startswith(b"tfd:")]


def _tree(root: int) -> list[int]:
    """``root`` and its descendants now (/proc)."""
    found, queue = [root], [root]
    while queue:
        pid = queue.pop()
        with contextlib.suppress(OSError, ValueError):
            for task in os.scandir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task.name}/children", "rb") as file:
                    children = [int(child) for child in file.read().split()]
                found += children
                queue += children
    return found


def _program(pid: int, shell: int) -> str:
    """The reading program's name: ``read`` for bash itself or a subshell (its builtin)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as file:
            name = file.read().strip()
    except OSError:
        name = "a program"
    return "read" if pid == shell or name == "bash" else name
