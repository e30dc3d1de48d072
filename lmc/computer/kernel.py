"""One running Jupyter kernel on this machine, driven the way nbclient drives one.

A :class:`KernelSession` owns a kernel process (:mod:`lmc.computer.kernel_process`) and its
client sockets (:mod:`lmc.computer.kernel_channels`). It starts in a background thread (so
start-up hides behind whatever the caller does meanwhile), and :meth:`KernelSession.execute`
sends one execute request and yields what comes back for it: the IOPub messages whose parent
is that request, plus fault events (:mod:`lmc.computer.kernel_events`), ending as the run's
clocks say (:mod:`lmc.computer.run_watch`). It waits with one poll over the sockets, a
pidfd of the kernel process and a wake pipe, so output, the reply, the kernel's death and an
interrupt all wake it at once.

This is the one place that maps socket and process errors to
:class:`~lmc.errors.ComputerError`. The kernel's events, the :class:`Kernel` protocol and the
timing constants are importable from here too.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from lmc.computer.kernel_events import (
    InterruptIgnored,
    Kernel,
    KernelDied,
    KernelEvent,
    TimedOut,
    describe_exit,
)
from lmc.computer.kernel_process import (
    KERNEL_ENV,
    child_groups,
    kill_group,
    launch_plan,
    start_process,
    write_connection,
)
from lmc.computer.kernelspecs import KernelSpec
from lmc.computer.run_watch import IDLE_AFTER_REPLY, INTERRUPT_GRACE, RunWatch
from lmc.computer.runtime import default_runtime_dir
from lmc.computer.sandbox import SandboxLaunch, SandboxPolicy
from lmc.computer.sandbox.shared_net import SharedNetwork
from lmc.computer.starting import BackgroundStart
from lmc.errors import ComputerError

if TYPE_CHECKING:
    from lmc.computer.kernel_channels import KernelChannels

__all__ = [
    "IDLE_AFTER_REPLY",
    "INTERRUPT_GRACE",
    "KERNEL_ENV",
    "InterruptIgnored",
    "Kernel",
    "KernelDied",
    "KernelEvent",
    "KernelSession",
    "TimedOut",
    "default_runtime_dir",
    "describe_exit",
]

#: Seconds a kernel may take to start and answer kernel_info.
START_TIMEOUT: Final = 60.0
#: Seconds a wrapper kernel gets to end its code's session after a shutdown request.
SHUTDOWN_GRACE: Final = 1.0
#: Without a pidfd (not Linux), how often the kernel process is checked while waiting.
_LIVENESS_INTERVAL: Final = 0.25
_LOG_TAIL: Final = 2000
#: Seconds a kernel gets to answer a request about a block's stdin.
INPUT_TIMEOUT: Final = 10.0


class KernelSession(BackgroundStart):
    """A kernel process plus the sockets that drive it; one request at a time."""

    def __init__(
        self,
        spec: KernelSpec,
        *,
        runtime_dir: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        start_timeout: float = START_TIMEOUT,
        sandbox: SandboxPolicy | None = None,
        shared: tuple[Path, ...] = (),
        network: SharedNetwork | None = None,
    ) -> None:
        """``shared``: folders bound writable into the sandbox besides the kernel's own
        (its state folder, :mod:`lmc.computer.state`)."""
        super().__init__()
        self._shared = shared
        self._network = network  # the session's shared network namespace (sandboxed)
        self.spec = spec
        self.sandbox = sandbox if sandbox is not None and sandbox.enabled else None
        self._runtime_dir = runtime_dir
        self._cwd = cwd
        self._env = dict(env or {})
        self._start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._wake_read, self._wake_write = os.pipe()  # interrupt() wakes a waiting execute()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._channels: KernelChannels | None = None
        self._log: IO[bytes] | None = None
        self._connection_file: Path | None = None
        self._log_path: Path | None = None
        self._interrupted_at: float | None = None
        self._sandbox_launch: SandboxLaunch | None = None
        self._signal_group: int | None = None
        # The sockets serve one execute at a time; the run that holds them (no lock is held
        # across a yield) releases them if the kernel was shut down meanwhile.
        self._executing: int | None = None  # the thread whose run holds the sockets
        self._idle = threading.Condition(self._lock)  # a run ended (or the kernel did)
        self._released = False
        self._ran = False  # code was sent: it may have started children
        self._oom_before_release = False
        self.ready_at: float | None = None
        # Connect the sockets (and load the wire protocol's modules into lmc's process) only
        # once code is coming: a prestarted kernel the model never uses costs lmc's own
        # process nothing but its launch.
        self._wanted = threading.Event()
        self._launched = threading.Event()  # the process was spawned (or could not be)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def _start_name(self) -> str:
        return self.spec.name

    @property
    def _thread_name(self) -> str:
        return f"lmc-start-{self.spec.name}"

    def start(self) -> None:
        """Launch the kernel and connect to it, in the background."""
        self._wanted.set()
        super().start()

    def launch(self) -> None:
        """Launch the kernel in the background; its sockets wait for :meth:`start` or
        :meth:`wait_ready` (the process boots meanwhile all the same)."""
        super().start()

    def wait_launched(self) -> None:
        """Wait until :meth:`launch` has spawned the kernel's process (or failed to: then
        :meth:`wait_ready` says why); its boot goes on meanwhile."""
        self.launch()
        while not self._launched.wait(0.5):
            if self._ready.is_set() or self._thread is None:  # shut down, or closed before
                return

    def wait_ready(self) -> None:
        self._wanted.set()
        super().wait_ready()

    @property
    def alive(self) -> bool:
        """The kernel process is running."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def connection_file(self) -> Path | None:
        return self._connection_file

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._exit_status(self._process.poll())

    def death(self) -> str:
        """How the kernel process ended, in words."""
        return describe_exit(self.returncode)

    def _exit_status(self, returncode: int | None) -> int | None:
        """bwrap reports a kernel killed by signal N as status 128 + N: map it back."""
        if self.sandbox is not None and returncode is not None and 128 < returncode < 193:
            return -(returncode - 128)
        return returncode

    def interrupt(self) -> None:
        """Ask the running code to stop (SIGINT to the kernel's process group, or a message)."""
        process = self._process
        if not self.ready or process is None or process.poll() is not None:
            return
        self._interrupted_at = time.monotonic()
        with contextlib.suppress(OSError):  # a full pipe already wakes the waiter
            os.write(self._wake_write, b"!")
        if self.spec.interrupt_mode == "message":
            with self._lock:
                if self._channels is not None:
                    self._channels.send_control("interrupt_request", {})
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._interrupt_group(process.pid), signal.SIGINT)

    def ask_input(self, action: str, text: str = "") -> tuple[bool, str]:
        """Ask the running block's kernel about its stdin (lmc's shell kernel only, while a
        block runs): ``keep`` it open, ``write`` ``text``, or ``eof``. Whether it was done,
        and what happened in words."""
        with self._lock:
            channels = self._channels
            if channels is None or not self.alive:
                return False, "its kernel is gone"
            content = {"action": action, "text": text}
            reply = channels.ask_control("lmc_stdin_request", content, INPUT_TIMEOUT)
        if reply is None:
            return False, f"its kernel did not answer within {INPUT_TIMEOUT:g} s"
        return bool(reply.get("done")), str(reply.get("text") or reply.get("evalue") or "")

    def _interrupt_group(self, pid: int) -> int:
        """The process group the code runs in: bwrap's own outside a sandbox; inside, the
        sandbox's session (``--new-session``), led by the sandbox's init, bwrap's child."""
        if self.sandbox is None or not sys.platform.startswith("linux"):
            return pid
        if self._signal_group is None:
            children = Path(f"/proc/{pid}/task/{pid}/children")
            with contextlib.suppress(OSError, ValueError):
                self._signal_group = int(children.read_text().split()[0])
        return pid if self._signal_group is None else self._signal_group

    def out_of_memory(self) -> bool:
        """Whether the sandbox's memory limit killed one of this kernel's processes."""
        if self._released:
            seen, self._oom_before_release = self._oom_before_release, False
            return seen
        plan = self._sandbox_launch
        return plan is not None and plan.out_of_memory()

    def shutdown(self) -> None:
        """Stop the kernel: SIGKILL to its process group (after a shutdown request for the
        wrapper kernels, which end their code's own session then)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._wanted.set()  # a start waiting to connect goes on, to see it was shut down
        if thread is not None and thread.is_alive():  # still starting: stop it where it is
            if self._process is not None:
                kill_group(self._process.pid)
            thread.join()
        process = self._process
        if process is not None:
            if self.spec.shutdown_request and self._ran:
                self._end_code_sessions(process)
            # No grace period otherwise: the kernel's state goes with it anyway, and waiting
            # for it to tidy up was most of the time lmc took to exit.
            kill_group(process.pid)
            process.wait()
        # A run still reading the sockets ends within moments of the kernel's death; sockets
        # are not thread-safe, so that run closes them as it ends (see execute).
        with self._idle:
            busy = self._executing is not None
            self._idle.notify_all()  # a run waiting for its turn: there will be none
        if not busy:
            self._release()
        elif self._connection_file is not None:
            shutil.rmtree(self._connection_file.parent, ignore_errors=True)

    def _end_code_sessions(self, process: subprocess.Popen[bytes]) -> None:
        """A wrapper kernel runs its code in a session of its own (bash, node), which the
        kernel group's SIGKILL does not reach: its process groups are killed first
        (background jobs included); without /proc, the kernel is asked to."""
        groups = child_groups(process.pid)
        channels = self._channels
        if groups is None and channels is not None:
            with contextlib.suppress(Exception):  # best effort: the kernel may be wedged
                channels.send_control("shutdown_request", {"restart": False})
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(SHUTDOWN_GRACE)
        for group in groups or ():
            kill_group(group)

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        if self._channels is not None:
            self._channels.close()
            self._channels = None
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._connection_file is not None:
            shutil.rmtree(self._connection_file.parent, ignore_errors=True)
        if self._sandbox_launch is not None:
            # Its control groups go with it: what they counted is kept for out_of_memory().
            self._oom_before_release = self._sandbox_launch.out_of_memory()
            self._sandbox_launch.close()

    # -- start-up (background thread) -------------------------------------------------------

    def _boot(self) -> None:
        try:
            try:
                self._launch()
            finally:
                self._launched.set()
            self._wanted.wait()
            if self._closed:
                raise ComputerError(f"the {self.spec.name} kernel was shut down while starting")
            self._connect()
            self._handshake()
            self.ready_at = time.monotonic()
        except ComputerError as exc:
            self._error = exc
        except Exception as exc:  # a bug or a foreign error: report it where the caller waits
            self._error = ComputerError(f"the {self.spec.name} kernel failed to start: {exc}")
            self._error.__cause__ = exc
        finally:
            self._ready.set()

    def _launch(self) -> None:
        if self._network is not None:
            self._network.begin()  # the namespace is made while the launch is prepared
        connection_file, self._log_path = write_connection(self._runtime_dir, self.spec.name)
        self._connection_file = connection_file
        self._log = self._log_path.open("wb")
        plan, cwd = launch_plan(
            self.spec,
            connection_file,
            env=self._env,
            cwd=self._cwd,
            sandbox=self.sandbox,
            private_root=self._runtime_dir.parent,
            shared=self._shared,
            join_network=None if self._network is None else self._network.join_prefix,
        )
        if self.sandbox is not None:
            self._sandbox_launch = plan
        self._process = start_process(plan, self._log, cwd, self.spec.name)
        if hasattr(os, "pidfd_open"):
            self._pidfd = os.pidfd_open(self._process.pid)

    def _connect(self) -> None:
        # Imported here, after the launch: the wire protocol's modules are not needed to
        # spawn a kernel (``lmc run`` launches its shell before loading them).
        from lmc.computer.kernel_channels import KernelChannels

        assert self._connection_file is not None
        fds = [self._wake_read] if self._pidfd is None else [self._pidfd, self._wake_read]
        self._channels = KernelChannels(self._connection_file, fds)

    def _handshake(self) -> None:
        """kernel_info until both a reply and IOPub traffic arrive (IOPub is subscribed)."""
        channels = self._open_channels()
        deadline = time.monotonic() + self._start_timeout
        msg_id = channels.client.kernel_info()
        replied = subscribed = False
        resend_at = time.monotonic() + 0.5
        while not (replied and subscribed):
            if self._closed:
                raise ComputerError(f"the {self.spec.name} kernel was shut down while starting")
            now = time.monotonic()
            if now >= deadline:
                raise self._start_failure(f"did not answer within {self._start_timeout:g} s")
            ready = self._poll(min(deadline, resend_at) - now)
            if self._pidfd in ready or not self.alive:
                raise self._start_failure(describe_exit(self._wait_exit()))
            for message in channels.drain(channels.iopub, ready):
                welcome = message["header"]["msg_type"] == "iopub_welcome"
                if welcome or message["parent_header"].get("msg_id") == msg_id:
                    subscribed = True
            for message in channels.drain(channels.shell, ready):
                if message["parent_header"].get("msg_id") == msg_id:
                    replied = True
            if time.monotonic() >= resend_at and not subscribed:
                msg_id = channels.client.kernel_info()  # the first one's IOPub went unheard
                replied = False
                resend_at = time.monotonic() + 0.5

    def _start_failure(self, why: str) -> ComputerError:
        if self._process is not None and self._process.poll() is None:
            kill_group(self._process.pid)
        if self.sandbox is not None:
            # The sandbox may be why: the next start probes bubblewrap again instead of
            # trusting what was found (or remembered for the boot) before.
            from lmc.computer.sandbox.detect import forget_tool

            forget_tool()
        log = self.log_tail()
        detail = f"\n{log}" if log else ""
        return ComputerError(f"the {self.spec.name} kernel failed to start: {why}{detail}")

    def log_tail(self) -> str:
        """The end of what the kernel process wrote to its own stdout/stderr."""
        path = self._log_path
        if path is None:
            return ""
        try:
            data = path.read_bytes()[-_LOG_TAIL:]
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()

    # -- running code -----------------------------------------------------------------------

    def execute(
        self, code: str, *, timeout: float | None = None, hand_back: bool = False
    ) -> Iterator[KernelEvent]:
        """Run ``code``; yield its IOPub messages and fault events until it is done.

        Ends after the execute reply and the kernel's idle status for this request, or right
        after a fault event. If the consumer stops early, the code is interrupted. With
        ``hand_back`` the time limit does not interrupt the code: :class:`TimedOut` (marked
        ``handed_back``) is yielded and the run goes on, for the consumer to keep as a job,
        possibly on another thread.
        """
        self.wait_ready()
        me = threading.get_ident()
        with self._idle:  # runs from several threads take turns
            while self._executing is not None:
                if self._executing == me:  # a run this thread left suspended: never ends
                    raise ComputerError(f"the {self.spec.name} kernel is already running code")
                self._idle.wait()
            if self._closed:
                raise ComputerError(f"the {self.spec.name} kernel was shut down")
            self._executing = me
            self._ran = True
        try:
            yield from self._execute(code, timeout, hand_back)
        finally:
            with self._idle:
                self._executing = None
                closed = self._closed
                self._idle.notify_all()
            if closed:  # shut down during the run: the sockets were left to this run
                self._release()

    def _execute(self, code: str, timeout: float | None, hand_back: bool) -> Iterator[KernelEvent]:
        channels = self._open_channels()
        msg_id = channels.client.execute(
            code, silent=False, store_history=True, allow_stdin=False, stop_on_error=False
        )
        self._interrupted_at = None
        run = RunWatch(timeout)
        try:
            while not run.done:
                wake_at = run.wake_at(self._interrupted_at)
                ready = self._poll(None if wake_at is None else wake_at - time.monotonic())
                if self._wake_read in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 4096)
                yield from self._take(channels, msg_id, ready, run)
                if run.finished():
                    break
                if self._pidfd in ready or not self.alive:
                    yield KernelDied(self._wait_exit())
                    return
                fault = run.expired(self._interrupted_at)
                if isinstance(fault, TimedOut) and hand_back:
                    yield TimedOut(fault.seconds, handed_back=True)  # the run goes on
                elif fault is not None:
                    yield fault
                    if isinstance(fault, InterruptIgnored):
                        return
                    self.interrupt()
        finally:
            if not run.done:
                self.interrupt()  # the consumer gave up on this run: stop the code too

    @staticmethod
    def _take(
        channels: KernelChannels, msg_id: str, ready: Mapping[Any, int], run: RunWatch
    ) -> Iterator[KernelEvent]:
        """This run's messages among those ready: output is yielded, reply and idle noted."""
        for message in channels.drain(channels.iopub, ready):
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            run.heard()
            msg_type = message["header"]["msg_type"]
            if msg_type == "status":
                run.idle = run.idle or message["content"].get("execution_state") == "idle"
            elif msg_type != "execute_input":
                yield message
        for message in channels.drain(channels.shell, ready):
            if message["parent_header"].get("msg_id") == msg_id:
                run.replied = True
                run.heard()
        for message in channels.drain(channels.stdin, ready):
            # Kernels that ignore allow_stdin=False (IRkernel) ask anyway: there is no
            # keyboard, so the answer is an empty line, and the consumer is told.
            if message["header"]["msg_type"] == "input_request":
                channels.client.input("")
                yield message

    def _open_channels(self) -> KernelChannels:
        if self._channels is None:
            raise ComputerError(f"lost the connection to the {self.spec.name} kernel")
        return self._channels

    def _poll(self, timeout: float | None) -> dict[Any, int]:
        """Wait up to ``timeout`` seconds (None: forever) for any socket or the pidfd."""
        if self._pidfd is None:  # no pidfd: wake now and then to check the process
            timeout = _LIVENESS_INTERVAL if timeout is None else min(timeout, _LIVENESS_INTERVAL)
        milliseconds = None if timeout is None else max(0, int(timeout * 1000) + 1)
        channels = self._open_channels()
        try:
            return channels.poll(milliseconds)
        except Exception as exc:  # OSError, ValueError: the sockets were closed under us
            raise ComputerError(f"lost the connection to the {self.spec.name} kernel") from exc

    def _wait_exit(self) -> int | None:
        process = self._process
        if process is None:
            return None
        try:
            return self._exit_status(process.wait(1.0))
        except subprocess.TimeoutExpired:
            return None
