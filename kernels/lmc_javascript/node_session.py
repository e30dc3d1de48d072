"""One persistent node process running node_driver.js, driven run by run over private pipes.

node's own stdout and stderr carry only what the user's code writes; the driver talks to the
kernel on three extra pipes (runs in, JSON events out, acknowledgements in; see the top of
node_driver.js). The driver reports the first line of each top-level statement before it
runs and waits for an acknowledgement, which the kernel sends after draining stdout and
stderr, so output and active lines come out in the order they happened.

An interrupt is SIGINT to node's process group: synchronous code stops through
``vm`` ``breakOnSigint``, a pending ``await`` is abandoned by the driver's SIGINT handler;
either way the globals stay.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ActiveLine", "Failed", "Finished", "NodeSession", "NodeStartError", "Output", "Result"]

DRIVER = Path(__file__).with_name("node_driver.js")
START_TIMEOUT = 20.0
POLL_INTERVAL = 0.2
READ_SIZE = 65536
MAX_OUTPUT_EVENT = 256 * 1024


class NodeStartError(Exception):
    """node is missing or its driver did not report ready."""


@dataclass(frozen=True)
class Output:
    name: str
    text: str


@dataclass(frozen=True)
class ActiveLine:
    line: int


@dataclass(frozen=True)
class Result:
    """The value of the run's last statement, as node's REPL would show it."""

    text: str


@dataclass(frozen=True)
class Failed:
    """The run threw (or was interrupted: ename ``KeyboardInterrupt``)."""

    ename: str
    evalue: str
    traceback: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Finished:
    """The run is over; ``exited`` means node itself ended (``process.exit``, a kill)."""

    exited: bool = False
    status: int = 0


Event = Output | ActiveLine | Result | Failed | Finished


@contextlib.contextmanager
def _children_get_default_sigint() -> Iterator[None]:
    """Let a child started now see SIGINT at its default rather than ignored.

    ipykernel ignores SIGINT between requests, an ignored signal stays ignored across exec,
    and node's ``breakOnSigint`` never fires for a signal that is ignored.
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


class _Stream:
    """One output pipe with its own UTF-8 decoder (bad bytes become U+FFFD)."""

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self.fd = fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_available(self) -> str:
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


def find_node() -> str | None:
    return shutil.which("node") or shutil.which("nodejs")


class NodeSession:
    """A node process plus the pipes to drive it. Not thread-safe except :meth:`interrupt`."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._fds: list[int] = []
        self._running = False
        self._started = False
        self._interrupt_pending = False
        self.version = ""
        self._wake_read, self.wakeup_fd = os.pipe()  # for signal.set_wakeup_fd
        for fd in (self._wake_read, self.wakeup_fd):
            os.set_blocking(fd, False)

    # -- lifetime -------------------------------------------------------------------------

    def start(self) -> None:
        node = find_node()
        if node is None:
            raise NodeStartError("node was not found on PATH; install Node.js 18 or newer")
        run_read, self._runs = os.pipe()
        self._events, event_write = os.pipe()
        ack_read, self._ack = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        fds = {"LMC_RUN_FD": run_read, "LMC_EVENT_FD": event_write, "LMC_ACK_FD": ack_read}
        with _children_get_default_sigint():
            self._process = subprocess.Popen(
                [node, "--expose-internals", str(DRIVER)],
                stdin=subprocess.DEVNULL,  # code that reads stdin sees end of file
                stdout=out_write,
                stderr=err_write,
                pass_fds=tuple(fds.values()),
                env={**os.environ, **{name: str(fd) for name, fd in fds.items()}},
                start_new_session=True,  # its own process group: SIGINT goes where we send it
            )
        for fd in (run_read, event_write, ack_read, out_write, err_write):
            os.close(fd)
        self._out = _Stream("stdout", out_read)
        self._err = _Stream("stderr", err_read)
        self._fds = [self._runs, self._events, self._ack, out_read, err_read]
        for fd in (self._events, out_read, err_read):
            os.set_blocking(fd, False)
        self._pending = b""
        try:
            self._pidfd = os.pidfd_open(self._process.pid)
            self._fds.append(self._pidfd)
        except (AttributeError, OSError):
            self._pidfd = None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            for event in self._read_events():
                if event.get("type") == "ready":
                    self.version = str(event.get("version", ""))
                    return
            if self._process.poll() is not None:
                detail = self._err.read_available().strip()
                self.close()
                raise NodeStartError(f"node exited at start: {detail or 'no message'}")
            if time.monotonic() > deadline:
                self.close()
                raise NodeStartError("node's driver did not report ready")
            select.select([self._events], [], [], 0.05)

    def close(self) -> None:
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

    def interrupt(self) -> None:
        """Stop the running code (safe from a signal handler); node and its globals stay."""
        if not self._running:
            return
        self._interrupt_pending = True
        if self._started:
            self._signal_group()

    def run(self, code: str) -> Iterator[Event]:
        if not self.alive:
            self.restart()
        self._started = False
        self._interrupt_pending = False
        self._running = True
        try:
            os.write(self._runs, json.dumps({"code": code}).encode() + b"\n")
            yield from self._follow()
        finally:
            self._running = False

    def _follow(self) -> Iterator[Event]:
        watched = [self._events, self._out.fd, self._err.fd, self._wake_read]
        if self._pidfd is not None:
            watched.append(self._pidfd)
        timeout = None if self._pidfd is not None else POLL_INTERVAL
        while True:
            ready, _, _ = select.select(watched, [], [], timeout)
            if self._wake_read in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, READ_SIZE)
            if self._events in ready:
                for event in self._read_events():
                    kind = event.get("type")
                    if kind == "start":
                        self._started = True
                        if self._interrupt_pending:
                            self._signal_group()
                        continue
                    yield from self._drain_output(final=kind == "done")
                    if kind == "line":
                        yield ActiveLine(int(event["line"]))
                        os.write(self._ack, b"a")
                    elif kind == "result":
                        yield Result(str(event["text"]))
                    elif kind == "error":
                        traceback = [str(line) for line in event.get("traceback", [])]
                        yield Failed(str(event["ename"]), str(event["evalue"]), traceback)
                    elif kind == "done":
                        yield Finished()
                        return
            if self._out.fd in ready or self._err.fd in ready:
                yield from self._drain_output()
            if self._pidfd in ready or (self._pidfd is None and not self.alive):
                yield from self._drain_output(final=True)
                assert self._process is not None
                status = self._process.wait()
                self.close()
                yield Finished(exited=True, status=status)
                return

    def _read_events(self) -> list[dict[str, Any]]:
        while True:
            try:
                data = os.read(self._events, READ_SIZE)
            except BlockingIOError:
                break
            if not data:
                break
            self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def _drain_output(self, *, final: bool = False) -> Iterator[Output]:
        for stream in (self._out, self._err):
            text = stream.read_available()
            if final:
                text += stream.flush()
            if text:
                yield Output(stream.name, text)

    def _signal_group(self) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGINT)
