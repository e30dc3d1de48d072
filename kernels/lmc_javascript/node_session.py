"""One persistent node process running node_driver.js, driven run by run over private pipes.

node's own stdout and stderr carry only what the user's code writes; the driver talks to the
kernel on three extra pipes (runs in, JSON events out, acknowledgements in; see the top of
node_driver.js). The driver reports the first line of each top-level statement before it
runs and waits for an acknowledgement, which the kernel sends after draining stdout and
stderr, so output and active lines come out in the order they happened.

An interrupt is SIGINT to node's process group: synchronous code stops through
``vm`` ``breakOnSigint``, a pending ``await`` is abandoned when the driver sees the SIGINT
that node's watchdog kept (the driver holds the watchdog for node's whole life, so SIGINT
never meets node's exit handler); either way the globals stay.
"""

from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import time
from collections.abc import Iterator

from lmc_wrapper.files import which
from lmc_wrapper.session import READ_SIZE, ActiveLine, Output, PipeSession

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any, NamedTuple

__all__ = ["ActiveLine", "Failed", "Finished", "NodeSession", "NodeStartError", "Output", "Result"]

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_driver.js")
START_TIMEOUT = 20.0


class NodeStartError(Exception):
    """node is missing or its driver did not report ready."""


if TYPE_CHECKING:

    class Result(NamedTuple):
        """The value of the run's last statement, as node's REPL would show it."""

        text: str

else:
    Result = collections.namedtuple("Result", "text")


if TYPE_CHECKING:

    class Failed(NamedTuple):
        """The run threw (or was interrupted: ename ``KeyboardInterrupt``)."""

        ename: str
        evalue: str
        traceback: list[str]

else:
    Failed = collections.namedtuple("Failed", "ename evalue traceback")


if TYPE_CHECKING:

    class Finished(NamedTuple):
        """The run is over; ``exited`` means node itself ended (``process.exit``, a kill)."""

        exited: bool = False
        status: int = 0

else:
    Finished = collections.namedtuple("Finished", "exited status", defaults=(False, 0))


Event = Output | ActiveLine | Result | Failed | Finished


def find_node() -> str | None:
    return which("node") or which("nodejs")


class NodeSession(PipeSession):
    """A node process plus the pipes to drive it. Not thread-safe except :meth:`interrupt`."""

    def __init__(self) -> None:
        super().__init__()
        self.version = ""

    # -- lifetime -------------------------------------------------------------------------

    def start(self) -> None:
        node = find_node()
        if node is None:
            raise NodeStartError("node was not found on PATH; install Node.js 18 or newer")
        run_read, self._runs = os.pipe()
        self._events, event_write = os.pipe()
        ack_read, self._ack = os.pipe()
        fds = {"LMC_RUN_FD": run_read, "LMC_EVENT_FD": event_write, "LMC_ACK_FD": ack_read}
        self._fds = [self._runs, self._events, self._ack]
        self._spawn(
            [node, "--expose-internals", DRIVER],
            stdin=subprocess.DEVNULL,  # code that reads stdin sees end of file
            pass_fds=tuple(fds.values()),
            env={**os.environ, **{name: str(fd) for name, fd in fds.items()}},
        )
        for fd in (run_read, event_write, ack_read):
            os.close(fd)
        os.set_blocking(self._events, False)
        self._pending = b""
        assert self._process is not None
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

    # -- running ------------------------------------------------------------------------

    def run(self, code: str) -> Iterator[Event]:
        if not self.alive:
            self.restart()
        self._begin()
        try:
            os.write(self._runs, json.dumps({"code": code}).encode() + b"\n")
            yield from self._follow()
        finally:
            self._running = False

    def _follow(self) -> Iterator[Event]:
        watched = self._watched(self._events)
        while True:
            ready, _, _ = select.select(watched, [], [], self._select_timeout)
            self._clear_wakeup(ready)
            self._repeat_interrupt()
            if self._events in ready:
                for event in self._read_events():
                    kind = event.get("type")
                    if kind == "start":
                        self._code_started()
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
            if self._child_ended(ready):
                status = yield from self._reap()
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
