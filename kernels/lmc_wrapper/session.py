"""A child process driven over private pipes: the machinery both wrapper kernels share.

The child runs in its own process group with stdout and stderr on pipes of their own, so an
interrupt is SIGINT to that group and user output is never mixed with the driving protocol
(each session adds its own control pipes). A signal arriving on another thread does not wake
``select()``; Python writes to :attr:`PipeSession.wakeup_fd` for every signal once it is
passed to ``signal.set_wakeup_fd()``, which does.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator, Sequence

from lmc_wrapper.files import which

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import IO, NamedTuple

__all__ = [
    "MAX_OUTPUT_EVENT",
    "POLL_INTERVAL",
    "READ_SIZE",
    "ActiveLine",
    "Output",
    "OutputStream",
    "PipeSession",
    "children_get_default_sigint",
]

#: Seconds between liveness checks where the platform has no pidfd (macOS).
POLL_INTERVAL = 0.2
READ_SIZE = 65536
#: Bytes of output one event carries at most, so messages stay small.
MAX_OUTPUT_EVENT = 256 * 1024
#: Seconds after an interrupt before it is sent again while the code still runs. A SIGINT can
#: land where nothing acts on it: node's breakOnSigint watchdog drops one that arrives as a
#: statement's script ends (``console.log(1); await x``), and bash runs a command it had
#: already decided on after its INT trap only set a flag.
INTERRUPT_REPEAT = 0.25
#: Seconds after the first interrupt before the code's programs (every process of the child's
#: group but the child itself: bash or node keeps its state) get SIGTERM, then SIGKILL. A
#: program that ignores SIGINT (vim, ``trap '' INT``) would otherwise hold the block until
#: lmc restarts the whole kernel, 3 s after its interrupt (lmc.computer.run_watch).
ESCALATE_TERM = 1.0
ESCALATE_KILL = 2.0


if TYPE_CHECKING:

    class Output(NamedTuple):
        """Text the code wrote; ``name`` is ``"stdout"`` or ``"stderr"``."""

        name: str
        text: str

else:
    Output = collections.namedtuple("Output", "name text")


if TYPE_CHECKING:

    class ActiveLine(NamedTuple):
        """Line ``line`` (1-based) of the code is about to run."""

        line: int

else:
    ActiveLine = collections.namedtuple("ActiveLine", "line")


@contextlib.contextmanager
def children_get_default_sigint() -> Iterator[None]:
    """Let a child started now see SIGINT at its default, not ignored as in the kernel.

    ipykernel ignores SIGINT between requests and an ignored signal stays ignored across
    exec, so the child and every command it runs would shrug off interrupts (and node's
    ``breakOnSigint`` would never fire). A Python handler, unlike SIG_IGN, is reset to the
    default by exec.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dying_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that it gets SIGKILL when the kernel dies (Linux, util-linux setpriv).

    The child runs in a session of its own, so nothing else ends it if the kernel is killed
    outright (SIGKILL, the out-of-memory killer, a client's ``shutdown_kernel(now=True)``):
    a busy bash would spin on, orphaned. ``setpriv --pdeathsig`` sets ``PR_SET_PDEATHSIG``
    and execs the command in place (the pid stays the child's); it is tied to the thread that
    started the child, the kernel's main thread, which lives as long as the kernel. A
    ``preexec_fn`` could do the same without setpriv, but is unsafe in a threaded process.
    """
    if not sys.platform.startswith("linux"):
        return argv
    setpriv = which("setpriv")
    return argv if setpriv is None else [setpriv, "--pdeathsig", "KILL", "--", *argv]


class OutputStream:
    """One output pipe with its own UTF-8 decoder (bad bytes become U+FFFD)."""

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self.fd = fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_available(self) -> str:
        """Everything in the pipe right now, decoded (never blocks)."""
        parts: list[str] = []
        size = 0
        while size < MAX_OUTPUT_EVENT:
            try:
                data = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                break
            if not data:
                break
            size += len(data)
            parts.append(self._decoder.decode(data))
            if len(data) < READ_SIZE:
                break
        return "".join(parts)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


class PipeSession:
    """A child process plus the pipes to drive it. Not thread-safe except :meth:`interrupt`.

    A subclass starts the child with :meth:`_spawn` in its ``start`` and, while a run is
    followed, sets ``_started`` once the child reports that the user's code began: an
    interrupt that comes earlier is held until then (:meth:`_begin`).
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._fds: list[int] = []
        self._running = False
        self._started = False
        self._interrupt_pending = False
        self._interrupt_sent_at: float | None = None
        self._interrupt_first_at: float | None = None
        self._earlier: set[int] = set()  # the child's children before this run (its `&` jobs)
        self._wake_read, self.wakeup_fd = os.pipe()  # for signal.set_wakeup_fd
        for fd in (self._wake_read, self.wakeup_fd):
            os.set_blocking(fd, False)

    # -- lifetime -------------------------------------------------------------------------

    def start(self) -> None:
        raise NotImplementedError

    def _spawn(
        self,
        argv: list[str],
        *,
        stdin: int | IO[bytes],
        pass_fds: Sequence[int],
        env: dict[str, str],
    ) -> None:
        """Start ``argv`` in its own process group, stdout and stderr on private pipes.

        The caller owns ``pass_fds`` (it closes its copies of the child's ends).
        """
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        with children_get_default_sigint():
            self._process = subprocess.Popen(
                dying_with_parent(argv),
                stdin=stdin,
                stdout=out_write,
                stderr=err_write,
                pass_fds=tuple(pass_fds),
                env=env,
                start_new_session=True,  # its own process group: SIGINT goes where we send it
            )
        for fd in (out_write, err_write):
            os.close(fd)
        self._out = OutputStream("stdout", out_read)
        self._err = OutputStream("stderr", err_read)
        self._fds += [out_read, err_read]
        for fd in (out_read, err_read):
            os.set_blocking(fd, False)
        try:
            self._pidfd = os.pidfd_open(self._process.pid)
            self._fds.append(self._pidfd)
        except (AttributeError, OSError):
            self._pidfd = None

    def close(self) -> None:
        """Stop the child and everything it started in its process group.

        The session can be started again (:meth:`restart`); the wake-up pipe stays.
        """
        process = self._process
        self._process = None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def restart(self) -> None:
        self.close()
        self.start()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- running ------------------------------------------------------------------------

    def run(self, code: str) -> Iterator[object]:
        """Run ``code``: :class:`Output`, :class:`ActiveLine` and the session's own events."""
        raise NotImplementedError

    def interrupt(self) -> None:
        """Stop the running code (safe from a signal handler); the child and its state stay."""
        if not self._running:
            return
        self._interrupt_pending = True
        if self._started:
            self._signal_group()

    def _begin(self) -> None:
        """A run is about to be sent to the child: no interrupt is held from before."""
        self._earlier = _children(self._process.pid) if self._process is not None else set()
        self._started = False
        self._interrupt_pending = False
        self._interrupt_sent_at = None
        self._interrupt_first_at = None
        self._running = True

    def _code_started(self) -> None:
        """The child reports the user's code began: deliver an interrupt that came early."""
        self._started = True
        if self._interrupt_pending:
            self._signal_group()

    def _watched(self, control: int) -> list[int]:
        """The fds a run waits on: ``control`` (the child's reports), output, wake-up, pidfd."""
        watched = [control, self._out.fd, self._err.fd, self._wake_read]
        if self._pidfd is not None:
            watched.append(self._pidfd)
        return watched

    @property
    def _select_timeout(self) -> float | None:
        """How long a run's ``select()`` may wait: until an interrupt is due again, at most."""
        timeout = None if self._pidfd is not None else POLL_INTERVAL
        if self._interrupt_sent_at is not None:
            due = max(0.0, self._interrupt_sent_at + INTERRUPT_REPEAT - time.monotonic())
            timeout = due if timeout is None else min(timeout, due)
        return timeout

    def _repeat_interrupt(self) -> None:
        """Send the interrupt again if the code still runs ``INTERRUPT_REPEAT`` s after it."""
        sent_at = self._interrupt_sent_at
        if sent_at is not None and time.monotonic() >= sent_at + INTERRUPT_REPEAT:
            self._signal_group()
        first = self._interrupt_first_at
        if first is not None and time.monotonic() >= first + ESCALATE_TERM:
            late = time.monotonic() >= first + ESCALATE_KILL
            self._signal_programs(signal.SIGKILL if late else signal.SIGTERM)

    def _clear_wakeup(self, ready: list[int]) -> None:
        if self._wake_read in ready:  # the signal handler has run (or runs now)
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_read, READ_SIZE)

    def _child_ended(self, ready: list[int]) -> bool:
        return self._pidfd in ready or (self._pidfd is None and not self.alive)

    def _reap(self) -> Generator[Output, None, int]:
        """Yield the dead child's last output, close the session and return its status."""
        yield from self._drain_output(final=True)
        assert self._process is not None
        status = self._process.wait()
        self.close()
        return status

    def _drain_output(self, *, final: bool = False) -> Iterator[Output]:
        for stream in (self._out, self._err):
            text = stream.read_available()
            if final:
                text += stream.flush()
            if text:
                yield Output(stream.name, text)

    def _escalating(self) -> None:
        """The interrupt is escalated: a subclass makes the rest of the block not run."""

    def _signal_programs(self, signum: int) -> None:
        """``signum`` to every process of the child's group that this run started, except the
        child (Linux /proc): what earlier runs left in the background (``sleep 60 &``, which
        bash runs with SIGINT ignored) keeps running, as it does after a plain interrupt."""
        process = self._process
        if process is None:
            return
        self._escalating()
        members = _group_members(process.pid)
        earlier = set(self._earlier)
        grown = True
        while grown:  # what the earlier runs' processes started in turn
            more = {pid for pid, parent in members.items() if parent in earlier} - earlier
            earlier |= more
            grown = bool(more)
        for pid in members:
            if pid != process.pid and pid not in earlier:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)

    def _signal_group(self) -> None:
        self._interrupt_sent_at = time.monotonic()
        if self._interrupt_first_at is None:
            self._interrupt_first_at = self._interrupt_sent_at
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGINT)


def _children(pid: int) -> set[int]:
    """``pid``'s children now (Linux /proc; none without it)."""
    found: set[int] = set()
    with contextlib.suppress(OSError, ValueError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task.name}/children", "rb") as file:
                found.update(int(child) for child in file.read().split())
    return found


def _group_members(group: int) -> dict[int, int]:
    """The live processes of process group ``group`` and their parents, from /proc (none
    without it)."""
    members: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == group:
                members[int(entry.name)] = int(fields[1])
    return members
