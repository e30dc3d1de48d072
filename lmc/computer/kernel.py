"""One running Jupyter kernel, driven the way nbclient drives one.

A :class:`KernelSession` owns a kernel process and its client sockets. It starts in a
background thread (so start-up hides behind whatever the caller does meanwhile), and
:meth:`KernelSession.execute` sends one execute request and yields what comes back for it:
the IOPub messages whose parent is that request, plus fault events (:class:`KernelDied`,
:class:`TimedOut`, :class:`InterruptIgnored`). It waits with one ``zmq`` poll over the IOPub
socket, the shell socket and a pidfd of the kernel process, so output, the reply and the
kernel's death all wake it at once; there is no sleep-polling.

Kernels are launched with lmc's own argv (:mod:`lmc.computer.kernelspecs`), inside the
sandbox a :class:`~lmc.computer.sandbox.SandboxPolicy` describes (when it is on), with stdin
from /dev/null and their own stdout/stderr in a log file (shown when a kernel fails to start).
Each kernel gets a private (0700) directory holding its owner-only connection file and, on
POSIX, its ZeroMQ ipc sockets (Unix sockets: no TCP port anyone on the machine can reach, and
they work inside a sandbox without a network); that one directory is shared into the sandbox.

This is the one place that maps jupyter_client, zmq and process errors to
:class:`~lmc.errors.ComputerError`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import IO, Any, Final, Protocol

from lmc.computer.kernelspecs import KernelSpec, kernels_dir
from lmc.computer.runtime import default_runtime_dir
from lmc.computer.sandbox import SandboxLaunch, SandboxPolicy, launch, prepare_launch
from lmc.computer.starting import BackgroundStart
from lmc.errors import ComputerError

__all__ = [
    "InterruptIgnored",
    "Kernel",
    "KernelDied",
    "KernelEvent",
    "KernelSession",
    "TimedOut",
    "default_runtime_dir",
]

#: Seconds a kernel may take to start and answer kernel_info.
START_TIMEOUT: Final = 60.0
#: Seconds a kernel gets to stop after an interrupt before it is killed and restarted.
INTERRUPT_GRACE: Final = 3.0
#: Seconds of IOPub silence after the execute reply before a lost idle status is assumed.
#: The kernel sends idle right after the reply; only a kernel whose IOPub drops messages under
#: a slow reader (IRkernel; lmc's own kernels wait instead) can lose it, and without this the
#: run would wait for it forever.
IDLE_AFTER_REPLY: Final = 5.0
#: Seconds a wrapper kernel gets to end its code's session after a shutdown request.
SHUTDOWN_GRACE: Final = 1.0
#: Without a pidfd (not Linux), how often the kernel process is checked while waiting.
_LIVENESS_INTERVAL: Final = 0.25
_LOG_TAIL: Final = 2000
#: IOPub messages that may wait in lmc's process (kernels send at most ~256 KB each).
RECEIVE_QUEUE: Final = 64

#: Environment every kernel gets: no pager waiting for a keypress that never comes.
KERNEL_ENV: Final = {"PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat"}


@dataclass(frozen=True)
class KernelDied:
    """The kernel process exited (or, remote, was lost) while a request was running."""

    returncode: int | None
    #: What happened, in words, when there is no local exit status to describe (a remote
    #: kernel the gateway restarted, or a gateway that went away).
    reason: str | None = None

    def describe(self) -> str:
        """How it died, in words ("exit status 3", "killed by SIGSEGV (a crash)")."""
        return self.reason if self.reason is not None else describe_exit(self.returncode)


@dataclass(frozen=True)
class TimedOut:
    """The run hit its time limit; the kernel has been interrupted."""

    seconds: float


@dataclass(frozen=True)
class InterruptIgnored:
    """The kernel did not stop within the grace time after an interrupt; it was killed."""

    seconds: float


KernelEvent = dict[str, Any] | KernelDied | TimedOut | InterruptIgnored


def describe_exit(returncode: int | None) -> str:
    """A kernel process's end in words."""
    if returncode is None:
        return "it stopped answering"
    if returncode >= 0:
        return f"it exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    why = {
        "SIGSEGV": " (a crash)",
        "SIGBUS": " (a crash)",
        "SIGABRT": " (an abort)",
        "SIGKILL": " (from outside, often the out-of-memory killer)",
    }.get(name, "")
    return f"it was killed by {name}{why}"


class Kernel(Protocol):
    """What :class:`~lmc.computer.Computer` needs of a kernel, local or remote.

    :class:`KernelSession` runs one on this machine;
    :class:`lmc.computer.gateway_kernel.GatewayKernel` has a Jupyter Kernel/Enterprise Gateway
    run one.
    """

    sandbox: SandboxPolicy | None
    started_at: float | None

    @property
    def ready(self) -> bool: ...

    @property
    def alive(self) -> bool: ...

    def death(self) -> str:
        """How the kernel ended, in words, once it is not alive."""
        ...

    def out_of_memory(self) -> bool:
        """Whether lmc's sandbox's memory limit killed one of its processes."""
        ...

    def start(self) -> None: ...

    def wait_ready(self) -> None: ...

    def interrupt(self) -> None: ...

    def shutdown(self) -> None: ...

    def execute(self, code: str, *, timeout: float | None = None) -> Iterator[KernelEvent]: ...


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
    ) -> None:
        super().__init__()
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
        self._client: Any = None
        self._context: Any = None
        self._poller: Any = None
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

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def _start_name(self) -> str:
        return self.spec.name

    @property
    def _thread_name(self) -> str:
        return f"lmc-start-{self.spec.name}"

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
                client = self._client
                if client is not None:
                    message = client.session.msg("interrupt_request", {})
                    client.control_channel.send(message)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._interrupt_group(process.pid), signal.SIGINT)

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
        if thread is not None and thread.is_alive():  # still starting: stop it where it is
            if self._process is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._process.pid, signal.SIGKILL)
            thread.join()
        process = self._process
        client = self._client
        if self.spec.shutdown_request and self._ran and process is not None:
            # A wrapper kernel runs its code in a session of its own (bash, node), which the
            # kernel group's SIGKILL below does not reach: its process groups are killed
            # first (background jobs included); without /proc, the kernel is asked to.
            groups = _child_groups(process.pid)
            if groups is None and client is not None:
                with contextlib.suppress(Exception):  # best effort: the kernel may be wedged
                    client.control_channel.send(
                        client.session.msg("shutdown_request", {"restart": False})
                    )
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(SHUTDOWN_GRACE)
            for group in groups or ():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal.SIGKILL)
        if process is not None:
            # No grace period otherwise: the kernel's state goes with it anyway, and waiting
            # for it to tidy up was most of the time lmc took to exit.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
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

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
            self._client = None
        if self._context is not None:
            self._context.destroy(linger=0)
            self._context = None
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
            self._launch()
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
        import zmq
        from jupyter_client.blocking.client import BlockingKernelClient
        from jupyter_client.connect import write_connection_file
        from jupyter_client.launcher import launch_kernel

        # Short names: a Unix socket path must fit in about 100 bytes.
        stem = f"k-{self.spec.name[:12]}-{uuid.uuid4().hex[:8]}"
        private = self._runtime_dir / stem
        private.mkdir(mode=0o700)
        connection_file = private / "kernel.json"
        ipc = os.name == "posix"
        write_connection_file(
            str(connection_file),
            ip=str(private / "s") if ipc else "127.0.0.1",
            transport="ipc" if ipc else "tcp",
            key=secrets.token_hex(32).encode(),
            kernel_name=self.spec.name,
        )
        self._connection_file = connection_file
        self._log_path = self._runtime_dir / f"{stem}.log"
        self._log = self._log_path.open("wb")
        kernel_env = {**KERNEL_ENV, **self.spec.env, **self._env}
        command = self.spec.command(str(connection_file))
        cwd = self._cwd
        plan = SandboxLaunch(command, {**os.environ, **kernel_env})
        if self.sandbox is not None:
            cwd = cwd or self.sandbox.workdir
            # The spec's folder and its siblings (the wrapper kernels share lmc_wrapper/),
            # the interpreter, and the workdir (read-only mode binds it no other way): seen
            # even when they live under /tmp, which is private.
            needed = [
                self.sandbox.workdir,
                kernels_dir(),
                self.spec.resource_dir,
                Path(sys.prefix),
                Path(sys.base_prefix),
                # Where the kernel's imports come from when lmc runs from a PYTHONPATH.
                *(Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p),
            ]
            plan = prepare_launch(
                self.sandbox,
                command,
                os.environ,
                kernel_env=kernel_env,
                shared=[private],
                readable=needed,
                cwd=cwd,
                private_root=self._runtime_dir.parent,
            )
            self._sandbox_launch = plan
        else:
            plan.argv = _dying_with_lmc(command)
        log = self._log

        def start() -> subprocess.Popen[bytes]:
            try:
                process: subprocess.Popen[bytes] = launch_kernel(
                    plan.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log.fileno(),
                    stderr=log.fileno(),
                    env=plan.env,
                    cwd=None if cwd is None else str(cwd),
                    pass_fds=plan.pass_fds,
                )
            finally:
                plan.started()
            return process

        try:
            # From lmc's long-lived launcher thread: bwrap's die-with-parent is tied to the
            # thread that starts it, and this start-up thread ends in a moment.
            self._process = launch(start)
        except OSError as exc:
            raise ComputerError(
                f"could not run the {self.spec.name} kernel ({plan.argv[0]}): {exc}"
            ) from exc
        if hasattr(os, "pidfd_open"):
            self._pidfd = os.pidfd_open(self._process.pid)
        self._context = zmq.Context()
        # Few messages queue here however fast a kernel prints: memory stays bounded, and a
        # slow consumer pushes back on the kernel's side instead.
        self._context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        client = BlockingKernelClient(connection_file=str(connection_file), context=self._context)
        client.load_connection_file()
        client.start_channels(shell=True, iopub=True, stdin=True, hb=False, control=True)
        self._client = client
        self._poller = zmq.Poller()
        self._poller.register(client.iopub_channel.socket, zmq.POLLIN)
        self._poller.register(client.shell_channel.socket, zmq.POLLIN)
        self._poller.register(client.stdin_channel.socket, zmq.POLLIN)
        if self._pidfd is not None:
            self._poller.register(self._pidfd, zmq.POLLIN)
        self._poller.register(self._wake_read, zmq.POLLIN)

    def _handshake(self) -> None:
        """kernel_info until both a reply and IOPub traffic arrive (IOPub is subscribed)."""
        client = self._client
        deadline = time.monotonic() + self._start_timeout
        msg_id = client.kernel_info()
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
            for message in self._drain(client.iopub_channel, ready):
                welcome = message["header"]["msg_type"] == "iopub_welcome"
                if welcome or message["parent_header"].get("msg_id") == msg_id:
                    subscribed = True
            for message in self._drain(client.shell_channel, ready):
                if message["parent_header"].get("msg_id") == msg_id:
                    replied = True
            if time.monotonic() >= resend_at and not subscribed:
                msg_id = client.kernel_info()  # the first one's IOPub status went unheard
                replied = False
                resend_at = time.monotonic() + 0.5

    def _start_failure(self, why: str) -> ComputerError:
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
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

    def execute(self, code: str, *, timeout: float | None = None) -> Iterator[KernelEvent]:
        """Run ``code``; yield its IOPub messages and fault events until it is done.

        Ends after the execute reply and the kernel's idle status for this request, or right
        after a fault event. If the consumer stops early, the code is interrupted.
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
            yield from self._execute(code, timeout)
        finally:
            with self._idle:
                self._executing = None
                closed = self._closed
                self._idle.notify_all()
            if closed:  # shut down during the run: the sockets were left to this run
                self._release()

    def _execute(self, code: str, timeout: float | None) -> Iterator[KernelEvent]:
        client = self._client
        msg_id = client.execute(
            code, silent=False, store_history=True, allow_stdin=False, stop_on_error=False
        )
        self._interrupted_at = None
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = replied = idle = False
        quiet_since = 0.0  # once replied: when the last IOPub message for this run arrived
        try:
            while not (replied and idle):
                wake_at = deadline
                if self._interrupted_at is not None:
                    grace_end = self._interrupted_at + INTERRUPT_GRACE
                    wake_at = grace_end if wake_at is None else min(wake_at, grace_end)
                if replied:
                    idle_by = quiet_since + IDLE_AFTER_REPLY
                    wake_at = idle_by if wake_at is None else min(wake_at, idle_by)
                ready = self._poll(None if wake_at is None else wake_at - time.monotonic())
                if self._wake_read in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 4096)
                for message in self._drain(client.iopub_channel, ready):
                    if message["parent_header"].get("msg_id") != msg_id:
                        continue
                    quiet_since = time.monotonic()
                    msg_type = message["header"]["msg_type"]
                    if msg_type == "status":
                        idle = idle or message["content"].get("execution_state") == "idle"
                    elif msg_type != "execute_input":
                        yield message
                for message in self._drain(client.shell_channel, ready):
                    if message["parent_header"].get("msg_id") == msg_id:
                        replied = True
                        quiet_since = time.monotonic()
                for message in self._drain(client.stdin_channel, ready):
                    # Kernels that ignore allow_stdin=False (IRkernel) ask anyway: there is no
                    # keyboard, so the answer is an empty line, and the consumer is told.
                    if message["header"]["msg_type"] == "input_request":
                        client.input("")
                        yield message
                if replied and (idle or time.monotonic() >= quiet_since + IDLE_AFTER_REPLY):
                    idle = True  # its idle status was lost on the way: the run is over
                    break
                if self._pidfd in ready or not self.alive:
                    yield KernelDied(self._wait_exit())
                    return
                now = time.monotonic()
                if self._interrupted_at is not None and now >= self._interrupted_at + (
                    INTERRUPT_GRACE
                ):
                    yield InterruptIgnored(INTERRUPT_GRACE)
                    return
                if deadline is not None and now >= deadline and not timed_out:
                    timed_out = True
                    deadline = None
                    yield TimedOut(timeout or 0.0)
                    self.interrupt()
        finally:
            if not (replied and idle):
                self.interrupt()  # the consumer gave up on this run: stop the code too

    def _poll(self, timeout: float | None) -> dict[Any, int]:
        """Wait up to ``timeout`` seconds (None: forever) for any socket or the pidfd."""
        if self._pidfd is None:  # no pidfd: wake now and then to check the process
            timeout = _LIVENESS_INTERVAL if timeout is None else min(timeout, _LIVENESS_INTERVAL)
        milliseconds = None if timeout is None else max(0, int(timeout * 1000) + 1)
        try:
            return dict(self._poller.poll(milliseconds))
        except Exception as exc:  # zmq.ZMQError: the context was torn down under us
            raise ComputerError(f"lost the connection to the {self.spec.name} kernel") from exc

    @staticmethod
    def _drain(channel: Any, ready: Mapping[Any, int]) -> Iterator[dict[str, Any]]:
        if channel.socket not in ready:
            return
        while True:
            try:
                yield channel.get_msg(timeout=0)
            except Empty:
                return

    def _wait_exit(self) -> int | None:
        process = self._process
        if process is None:
            return None
        try:
            return self._exit_status(process.wait(1.0))
        except subprocess.TimeoutExpired:
            return None


def _child_groups(pid: int) -> set[int] | None:
    """The process groups led by ``pid``'s children other than its own (a wrapper kernel's
    bash or node session, with its background jobs); None without /proc. What the code
    moved to a session of its own (setsid) is not reached, as by the kernel's do_shutdown:
    only the sandbox contains that."""
    proc = Path("/proc")
    if not (proc / str(pid)).is_dir():
        return None
    try:
        own = os.getpgid(pid)
    except ProcessLookupError:
        return set()
    groups: set[int] = set()
    for children in proc.glob(f"{pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            for child in children.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    group = os.getpgid(int(child))
                    if group != own:
                        groups.add(group)
    return groups


def _dying_with_lmc(argv: list[str]) -> list[str]:
    """An unsandboxed kernel's ``argv`` tied to lmc with ``PR_SET_PDEATHSIG`` (Linux).

    Killed outright (SIGKILL, the out-of-memory killer), lmc cannot end its kernels, and
    IRkernel, unlike ipykernel, never notices that its parent is gone. util-linux's setpriv
    sets the signal and execs the kernel in place; the signal is tied to the thread that
    starts the process, lmc's long-lived launcher thread. (In the sandbox, bubblewrap's
    die-with-parent does this.)
    """
    if not sys.platform.startswith("linux"):
        return argv
    setpriv = shutil.which("setpriv")
    return argv if setpriv is None else [setpriv, "--pdeathsig", "KILL", "--", *argv]
