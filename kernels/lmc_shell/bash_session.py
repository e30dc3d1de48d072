"""One persistent bash, driven block by block, with line and status reports on their own pipes.

Theory of operation
-------------------
bash runs interactively (``-i``, no line editing, no job control, empty prompts) with its
commands coming from a pipe. Interactive matters for one thing: on SIGINT bash abandons the
running block and goes back to its prompt with every variable, function and ``cd`` intact,
which is exactly what an interrupt should do. ``init.bash`` sets the shell up.

Each block is written to its own file and run with ``builtin . FILE 0<FIFO 1>&241
2>&242``, so ``$LINENO`` is the block's line, ``$?``/heredocs/``case``/functions/pipes are
plain bash, and stdin is at EOF instead of waiting for a person (a FIFO of the kernel's
that it closes once a program waits on it, until lmc makes the block a job: block_input.py).
A DEBUG trap reports ``L<line>`` on a control pipe before each line of that file runs (main
shell only); ``PROMPT_COMMAND`` reports ``D<status>`` when the block is over. User output
travels on its own two pipes, untouched.

Ordering: while a block is young the trap waits for a one-byte acknowledgement after each
report, and the kernel drains stdout and stderr before it acknowledges, so output and active
lines come out in the order they happened. Once reports arrive faster than
``LOCKSTEP_MAX_RATE`` (a tight loop), the acknowledgement tells bash to stop waiting and the
block runs at the trap's bare cost; the kernel then reports the latest line it sees.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import shlex
import signal
import time
from collections import deque
from collections.abc import Iterator

from block_input import BlockInput, hint, supported
from lmc_wrapper.files import private_dir, remove_tree, which
from lmc_wrapper.session import READ_SIZE, ActiveLine, Output, PipeSession

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import NamedTuple

__all__ = ["ActiveLine", "BashSession", "Finished", "Output", "ShellStartError"]

INIT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "init.bash")
#: Lockstep ends once this many reports arrive within ``LOCKSTEP_WINDOW`` seconds.
LOCKSTEP_MAX_RATE = 50
LOCKSTEP_WINDOW = 0.1
#: Seconds bash gets to show its first prompt.
START_TIMEOUT = 10.0
#: Seconds between active-line reports once the block runs free (the Python kernel's rate).
FREE_RUN_INTERVAL = 0.02


class ShellStartError(Exception):
    """bash is missing or did not reach its first prompt."""


if TYPE_CHECKING:

    class Finished(NamedTuple):
        """The block is over. ``exited`` means the shell itself ended (``exit``, a kill)."""

        status: int
        interrupted: bool
        exited: bool

else:
    Finished = collections.namedtuple("Finished", "status interrupted exited")


Event = Output | ActiveLine | Finished


def _make_dir(path: str) -> None:
    """``path`` as a private folder, if it is not there (a tmp cleaner may have taken it)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)


class _Pace:
    """Lockstep (bash waits for each line's acknowledgement) until the lines come faster
    than ``LOCKSTEP_MAX_RATE`` per ``LOCKSTEP_WINDOW``; free-running from then on."""

    def __init__(self) -> None:
        self.recent: deque[float] = deque(maxlen=LOCKSTEP_MAX_RATE)
        self.lockstep = True

    def step(self) -> bool:
        """One more line acknowledged; whether lockstep goes on."""
        now = time.monotonic()
        self.recent.append(now)
        self.lockstep = len(self.recent) < LOCKSTEP_MAX_RATE or (
            now - self.recent[0] >= LOCKSTEP_WINDOW
        )
        return self.lockstep


class BashSession(PipeSession):
    """A bash process plus the pipes to drive it. Not thread-safe except :meth:`interrupt`."""

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        dump_state: bool = False,
        home: str | None = None,
    ) -> None:
        """``dump_state``: after each block bash writes its directory and exports to
        :attr:`state_dump` (see shell_state.py). ``home``: the folder to keep the block files
        in (the kernel's own, removed with lmc's session even when the kernel is killed)."""
        super().__init__()
        self._env = dict(os.environ if env is None else env)
        self._dir = private_dir("lmc-shell-", home)  # block files, FIFOs, bash's state
        self.state_dump = os.path.join(self._dir, "state") if dump_state else None
        self._count = 0
        self._input_supported = supported()
        self._input: BlockInput | None = None  # the running block's stdin
        self._spare: BlockInput | None = None  # the last block's, still open and unused
        self.input_note = (
            None
            if self._input_supported
            else "this system does not show what a program waits for, so blocks read "
            "/dev/null and a job takes no input"
        )

    # -- lifetime -------------------------------------------------------------------------

    def start(self) -> None:
        """Start bash and wait for its first prompt."""
        bash = which("bash", path=self._env.get("PATH")) or which("bash")
        if bash is None:
            raise ShellStartError("bash was not found on PATH")
        command_read, self._command = os.pipe()
        self._control, control_write = os.pipe()
        ack_read, self._ack = os.pipe()
        _make_dir(self._dir)
        env = {
            **self._env,
            "LMC_CTL_FD": str(control_write),
            "LMC_ACK_FD": str(ack_read),
            "LMC_BLOCK_DIR": self._dir,
            **({"LMC_STATE_DUMP": self.state_dump} if self.state_dump else {}),
        }
        self._fds = [self._command, self._control, self._ack, ack_read]
        self._spawn(
            [bash, "--noprofile", "--rcfile", INIT_FILE, "--noediting", "-i"],
            stdin=command_read,
            pass_fds=(control_write, ack_read),
            env=env,
        )
        for fd in (command_read, control_write):
            os.close(fd)
        self._ack_read = ack_read  # kept to drain acknowledgements bash never read
        os.set_blocking(self._control, False)  # not ack_read: bash shares it
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while b"D" not in self._read_control_raw():
            if self._process.poll() is not None:
                raise ShellStartError(
                    f"bash exited at start with status {self._process.returncode}"
                )
            if time.monotonic() > deadline:
                self.close()
                raise ShellStartError("bash did not show its first prompt")
            select.select([self._control], [], [], 0.05)
        self._out.read_available()  # start-up chatter (job control warnings) is not output
        self._err.read_available()

    def use_environment(self, env: dict[str, str]) -> None:
        """The environment the next :meth:`start` gives bash (a restored state's)."""
        self._env = dict(env)

    def close(self) -> None:
        """Stop bash and everything it started in its process group; remove block files."""
        super().close()
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.end()
        remove_tree(self._dir)

    # -- running ------------------------------------------------------------------------

    def run(self, code: str) -> Iterator[Event]:
        """Run one block, yielding its output and active lines, then :class:`Finished`."""
        if not self.alive:
            self.restart()
        self._count += 1
        _make_dir(self._dir)  # a tmp cleaner may have taken it
        path = os.path.join(self._dir, f"{self._count}.sh")
        with open(path, "w", encoding="utf-8") as file:
            file.write(code if code.endswith("\n") else code + "\n")
        last_line = max(1, code.count("\n") + (0 if code.endswith("\n") else 1))
        self._read_control_raw()  # stale reports from an interrupted block
        self._drain_acks()
        self._begin()
        quoted = shlex.quote(path)
        block_input = self._next_input()
        self._input = block_input
        stdin = "/dev/null" if block_input is None else shlex.quote(block_input.path)
        line = (
            f"__lmc_intr=; builtin echo S >&243; __lmc_file={quoted} __lmc_line= __lmc_sync=s; "
            f"builtin . {quoted} 0<{stdin} 1>&241 2>&242\n"
        )
        try:
            os.write(self._command, line.encode())
            yield from self._follow(last_line)
        finally:
            self._running = False
            self._input = None
            if block_input is not None and not block_input.reusable:
                block_input.end()
            else:  # nobody wrote to it and it is open: the next block reads it too
                self._spare = block_input
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _next_input(self) -> BlockInput | None:
        """The next block's stdin: the last one's FIFO if it is still open and nobody wrote
        to it (no file to make and remove on every block), else a new one."""
        spare, self._spare = self._spare, None
        if not self._input_supported:
            return None
        if spare is not None and spare.reusable and spare.in_place():
            spare.rearm()
            return spare
        if spare is not None:
            spare.end()
        return BlockInput(os.path.join(self._dir, f"{self._count}.in"))

    def input_request(self, action: str, text: str = "") -> tuple[bool, str]:
        """lmc's request about the running block's stdin (any thread): ``keep`` it open (the
        block is a job now), ``write`` ``text`` to it, or ``eof`` (close it)."""
        block_input = self._input
        if block_input is None:
            return False, self.input_note or "no block is running"
        return block_input.request(action, text)

    def _check_input(self) -> Iterator[Output]:
        """A foreground program waiting on the block's stdin gets end-of-input, and a hint."""
        block_input, process = self._input, self._process
        if block_input is None or process is None:
            return
        reader = block_input.check(process.pid)
        if reader is not None:
            yield from self._drain_output()  # what it wrote before it waited comes first
            if block_input.give_eof():
                yield Output("stderr", hint(reader))

    def _escalating(self) -> None:
        """The rest of the block must not run once its program was killed (init.bash)."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._process.pid, signal.SIGUSR1)

    def _follow(self, last_line: int) -> Iterator[Event]:
        pace = _Pace()
        shown: int | None = None
        pending = b""
        watched = self._watched(self._control)
        quiet_until = 0.0  # free-running: the control pipe is read again from this time on
        while True:
            ready, quiet_until = self._wait(watched, quiet_until)
            self._repeat_interrupt()
            yield from self._check_input()
            if self._control in ready:
                data = self._read_control_raw()
                if not data:  # the block closed fd 243: only the shell's death ends it now
                    watched.remove(self._control)
                numbers, done, pending = self._reports(pending + data)
                if not pace.lockstep:  # free-running: the latest line, at a bounded rate
                    numbers = numbers[-1:]
                    quiet_until = time.monotonic() + FREE_RUN_INTERVAL
                for number in numbers:
                    yield from self._drain_output()
                    if number != shown:
                        shown = number
                        yield ActiveLine(min(number, last_line))
                    if pace.lockstep:
                        os.write(self._ack, b"s" if pace.step() else b"\n")
                if done is not None:
                    yield from self._drain_output(final=True)
                    status = int(done[1:]) if done[1:].isdigit() else 1
                    yield Finished(status, self._interrupt_pending and status != 0, exited=False)
                    return
            if self._out.fd in ready or self._err.fd in ready:
                yield from self._drain_output()
            if self._child_ended(ready):
                status = yield from self._reap()
                yield Finished(status, self._interrupt_pending, exited=True)
                return

    def _wait(self, watched: list[int], quiet_until: float) -> tuple[list[int], float]:
        """Wait for a ready pipe; the control pipe is left unread until ``quiet_until``."""
        now = time.monotonic()
        if quiet_until and now >= quiet_until:
            quiet_until = 0.0
        listened, wait = watched, self._select_timeout
        if self._input is not None and self._input.watching:  # only while a block runs
            due = self._input.due_in()
            wait = due if wait is None else min(wait, due)
        if quiet_until:
            listened = [fd for fd in watched if fd != self._control]
            wait = quiet_until - now if wait is None else min(quiet_until - now, wait)
        ready, _, _ = select.select(listened, [], [], wait)
        self._clear_wakeup(ready)
        return ready, quiet_until

    def _reports(self, pending: bytes) -> tuple[list[int], str | None, bytes]:
        """The line numbers reported in ``pending``'s complete lines, the ``D`` (done) report
        if one came, and the unfinished rest; nothing counts before the code's ``S``."""
        *lines, rest = pending.split(b"\n")
        reports = [report.decode() for report in lines]
        if not self._started and "S" in reports:
            reports = reports[reports.index("S") + 1 :]
            self._code_started()
        if not self._started:
            reports = []
        done = next((r for r in reports if r.startswith("D")), None)
        if done is not None:
            reports = reports[: reports.index(done)]
        numbers = [int(r[1:]) for r in reports if r[:1] == "L" and r[1:].isdigit()]
        return numbers, done, rest

    def _read_control_raw(self) -> bytes:
        parts: list[bytes] = []
        while True:
            try:
                data = os.read(self._control, READ_SIZE)
            except BlockingIOError:
                break
            if not data:
                break
            parts.append(data)
        return b"".join(parts)

    def _drain_acks(self) -> None:
        while select.select([self._ack_read], [], [], 0)[0]:
            os.read(self._ack_read, READ_SIZE)
