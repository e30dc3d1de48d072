"""One kernel on a Jupyter Kernel/Enterprise Gateway, behind the same interface as a local one.

:class:`GatewayKernel` starts its kernel with the gateway's REST API (in a background thread,
as a local kernel starts), then talks to it over the gateway's websocket
(``/api/kernels/{id}/channels``, the Jupyter messages as JSON with a ``channel`` key) and
yields the same events as :class:`~lmc.computer.kernel.KernelSession`: the IOPub messages of
the request, and :class:`KernelDied` when the gateway says the kernel died (a ``restarting``
or ``dead`` status) or the gateway itself goes away, :class:`TimedOut`, and
:class:`InterruptIgnored`. Interrupts go to the gateway's interrupt endpoint; at shutdown the
kernel is DELETEd.

A gateway runs stock kernels, not lmc's: for python, the first request after start-up
installs lmc's active-line tracker (the class in ``kernels/python/lmc_python_kernel.py``)
into the running ipykernel, silently (no history, no execution count), so active lines stream
as they do locally (and sets plain tracebacks, as lmc's kernel has). A kernel that is not
ipykernel just runs without active lines.

Remote kernels are contained by the gateway's deployment, not by lmc's sandbox: ``sandbox``
is always None here.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final

from lmc.computer.gateway import GatewayClient, GatewayConfig, require_websockets
from lmc.computer.kernel_events import InterruptIgnored, KernelDied, KernelEvent, TimedOut
from lmc.computer.kernelspecs import kernels_dir
from lmc.computer.run_watch import RunWatch
from lmc.computer.sandbox import SandboxPolicy
from lmc.computer.starting import BackgroundStart
from lmc.errors import ComputerError

__all__ = ["GatewayKernel"]

#: Longest wait for one websocket message while running: an interrupt (from another thread)
#: shortens the wait to its grace time within this many seconds.
_RECEIVE_SLICE: Final = 0.25
#: Seconds between kernel_info requests while the kernel comes up.
_HANDSHAKE_RESEND: Final = 2.0
#: Largest websocket message taken (an image output can be several MB).
_MAX_MESSAGE: Final = 64 * 1024 * 1024
#: Seconds a DELETE at shutdown may take (a gateway that went away must not hold lmc's exit).
_DELETE_TIMEOUT: Final = 5.0
_DELETE_TRIES: Final = 3
#: Seconds a shutdown waits for a start still in flight (which then deletes its kernel).
_START_JOIN: Final = 10.0
#: While the websocket opens, how often to ask the gateway whether the kernel still exists.
_WATCH_INTERVAL: Final = 1.0

_INSTALL_TRACKER: Final = """\
def _lmc_install_active_line(source):
    import types
    module = types.ModuleType("lmc_active_line")
    exec(compile(source, "<lmc active line>", "exec"), module.__dict__)
    shell = get_ipython()
    module.ActiveLineTracker(shell.kernel, shell).install()
    try:  # tracebacks as lmc's own kernel writes them: plain, no colours
        shell.colors = "nocolor"
        shell.InteractiveTB.set_mode(mode="Plain")
    except Exception:
        pass
_lmc_install_active_line({source!r})
del _lmc_install_active_line
"""


class _Lost(Exception):
    """The websocket to the gateway closed."""


def tracker_installer() -> str:
    """Code that installs lmc's active-line tracker into a running ipykernel."""
    source = (kernels_dir() / "python" / "lmc_python_kernel.py").read_text(encoding="utf-8")
    return _INSTALL_TRACKER.format(source=source)


class GatewayKernel(BackgroundStart):
    """A kernel the gateway runs, driven over its websocket; one request at a time."""

    def __init__(self, config: GatewayConfig, language: str) -> None:
        super().__init__()
        self.config = config
        self.language = language
        self.kernel_name = config.kernel_name(language)
        self.sandbox: SandboxPolicy | None = None
        self.ready_at: float | None = None
        self.kernel_id: str | None = None
        self._client = GatewayClient(config)
        self._session_id = uuid.uuid4().hex
        self._stack = contextlib.ExitStack()
        self._socket: Any = None
        self._died: str | None = None  # why it is gone, once it is
        self._restarting = False  # the gateway said it is restarting the kernel
        self._interrupted_at: float | None = None
        self._one_request = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def _start_name(self) -> str:
        return self.language

    @property
    def _thread_name(self) -> str:
        return f"lmc-gateway-{self.language}"

    @property
    def alive(self) -> bool:
        """Still running on the gateway, as far as its messages so far tell."""
        if not self.ready:
            return False
        if self._one_request.acquire(blocking=False):  # between runs: read what came
            try:
                self._read_pending()
            finally:
                self._one_request.release()
        return self._died is None

    def death(self) -> str:
        return self._died or "it stopped answering"

    def out_of_memory(self) -> bool:
        """Never lmc's sandbox's doing: the gateway's deployment sets a remote kernel's limits."""
        return False

    def interrupt(self) -> None:
        """Ask the gateway to interrupt the kernel (its interrupt endpoint, in a thread: this
        may run in a signal handler)."""
        kernel_id = self.kernel_id
        if not self.ready or kernel_id is None or self._died is not None:
            return
        self._interrupted_at = time.monotonic()

        def send() -> None:
            # A gone gateway shows in the run; a client closed by shutdown meanwhile raises
            # httpx's RuntimeError: the kernel is being deleted anyway.
            with contextlib.suppress(ComputerError, RuntimeError):
                self._client.interrupt(kernel_id)

        threading.Thread(target=send, name="lmc-gateway-interrupt", daemon=True).start()

    def shutdown(self) -> None:
        """Close the websocket and DELETE the kernel on the gateway."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            kernel_id = self.kernel_id
        with contextlib.suppress(Exception):  # the socket may be gone already
            self._stack.close()
        if kernel_id is not None:
            self._delete(kernel_id)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # A start in flight deletes its own kernel once the gateway answers; lmc's exit
            # waits for that only so long.
            thread.join(_START_JOIN)
        if thread is None or not thread.is_alive():
            self._client.close()

    def _delete(self, kernel_id: str) -> None:
        """DELETE the kernel. One the gateway is restarting (its process died) is answered
        only once the restart is over, which may take longer than one request's timeout:
        asked again, or it would be left running there."""
        tries = _DELETE_TRIES if self._restarting else 1
        for _ in range(tries):
            try:
                self._client.delete(kernel_id, timeout=_DELETE_TIMEOUT)
                return
            except ComputerError:  # slow, or gone (then the gateway deleted it anyway)
                continue

    # -- start-up (background thread) -------------------------------------------------------

    def _boot(self) -> None:
        try:
            self._launch()
            self._handshake()
            if self.language == "python":
                self._install_tracker()
            self.ready_at = time.monotonic()
        except ComputerError as exc:
            self._error = exc
        except _Lost:
            self._error = self._start_lost()
        except Exception as exc:  # a bug or a foreign error: report it where the caller waits
            self._error = ComputerError(
                f"the {self.language} kernel on the kernel gateway at {self.config.url} "
                f"failed to start: {exc}"
            )
            self._error.__cause__ = exc
        finally:
            if self._closed:  # shut down meanwhile: close what the start opened since
                with contextlib.suppress(Exception):
                    self._stack.close()
            self._ready.set()

    def _launch(self) -> None:
        kernel_id = self._client.start_kernel(self.kernel_name)
        with self._lock:
            self.kernel_id = kernel_id
            closed = self._closed
        if closed:  # shut down while the gateway was starting it
            with contextlib.suppress(ComputerError):
                self._client.delete(kernel_id, timeout=_DELETE_TIMEOUT)
            raise ComputerError(f"the {self.language} kernel was shut down while starting")
        require_websockets()
        from websockets.exceptions import InvalidHandshake, InvalidURI
        from websockets.sync.client import connect

        url = f"{self.config.websocket_url}/api/kernels/{kernel_id}/channels"
        opened: dict[str, Any] = {}

        def open_channels() -> None:
            try:
                opened["socket"] = self._stack.enter_context(
                    connect(
                        f"{url}?session_id={self._session_id}",
                        additional_headers=self.config.headers,
                        open_timeout=self.config.start_timeout,
                        max_size=_MAX_MESSAGE,
                    )
                )
            except Exception as exc:
                opened["error"] = exc

        # The gateway answers the websocket only once the kernel answers (or after its own
        # kernel_info timeout, a minute): meanwhile, ask it whether the kernel still exists.
        opener = threading.Thread(target=open_channels, name="lmc-gateway-open", daemon=True)
        opener.start()
        opener.join(_WATCH_INTERVAL)
        while opener.is_alive():
            if self._closed:
                raise ComputerError(f"the {self.language} kernel was shut down while starting")
            if self._client.kernel(kernel_id) is None:
                raise _Lost  # the gateway gave up on it (its kernel kept dying)
            opener.join(_WATCH_INTERVAL)
        error = opened.get("error")
        if isinstance(error, InvalidHandshake | InvalidURI | OSError | TimeoutError):
            raise ComputerError(
                f"cannot open the kernel channels on the kernel gateway at {self.config.url}: "
                f"{error}"
            ) from error
        if error is not None:
            raise error
        self._socket = opened["socket"]

    def _handshake(self) -> None:
        """kernel_info until it is answered (the gateway queues it while the kernel starts)."""
        deadline = time.monotonic() + self.config.start_timeout
        sent: set[str] = set()
        resend_at = 0.0
        while True:
            now = time.monotonic()
            if self._closed:
                raise ComputerError(f"the {self.language} kernel was shut down while starting")
            if now >= deadline:
                raise ComputerError(
                    f"the {self.language} kernel on the kernel gateway at {self.config.url} "
                    f"did not answer within {self.config.start_timeout:g} s"
                )
            if now >= resend_at:
                sent.add(self._send("shell", "kernel_info_request", {}))
                resend_at = now + _HANDSHAKE_RESEND
            message = self._receive(min(deadline, resend_at) - now)
            if self._died is not None:  # its process ended before it answered
                raise ComputerError(
                    f"the {self.language} kernel on the kernel gateway at {self.config.url} "
                    f"failed to start: {self._died}"
                )
            if message is None:
                continue
            if message["header"].get("msg_type") == "kernel_info_reply" and (
                message["parent_header"].get("msg_id") in sent
            ):
                return

    def _install_tracker(self) -> None:
        """Bring lmc's active-line tracker into the stock ipykernel; without it, runs simply
        have no active lines."""
        msg_id = self._send_execute(tracker_installer(), silent=True)
        deadline = time.monotonic() + self.config.start_timeout
        replied = idle = False
        while not (replied and idle) and time.monotonic() < deadline:
            message = self._receive(deadline - time.monotonic())
            if message is None or message["parent_header"].get("msg_id") != msg_id:
                continue
            msg_type = message["header"].get("msg_type")
            replied = replied or msg_type == "execute_reply"
            idle = idle or (
                msg_type == "status" and message["content"].get("execution_state") == "idle"
            )

    def _start_lost(self) -> ComputerError:
        """The kernel went away while it started: say what the gateway says of it."""
        where = f"the {self.language} kernel on the kernel gateway at {self.config.url}"
        kernel_id = self.kernel_id
        try:
            model = None if kernel_id is None else self._client.kernel(kernel_id)
        except ComputerError as exc:
            return ComputerError(f"{where} did not start: {exc}")
        state = "gone" if model is None else f"{model.get('execution_state', 'unknown')!s}"
        return ComputerError(
            f"{where} did not start (the gateway says the kernel is {state}; is its "
            f"kernelspec {self.kernel_name!r} broken there?)"
        )

    # -- running code -----------------------------------------------------------------------

    def execute(
        self, code: str, *, timeout: float | None = None, hand_back: bool = False
    ) -> Iterator[KernelEvent]:
        """Run ``code``; yield its IOPub messages and fault events until it is done."""
        self.wait_ready()
        with self._one_request:
            yield from self._execute(code, timeout, hand_back)

    def _execute(self, code: str, timeout: float | None, hand_back: bool) -> Iterator[KernelEvent]:
        if self._died is not None:
            yield KernelDied(None, reason=self._died)
            return
        try:
            msg_id = self._send_execute(code, silent=False)
        except _Lost:
            yield self._run_lost()
            return
        self._interrupted_at = None
        run = RunWatch(timeout)
        try:
            while not run.done:
                try:
                    message = self._receive(self._wait(run))
                except _Lost:
                    yield self._run_lost()
                    return
                if self._died is not None:
                    yield KernelDied(None, reason=self._died)
                    return
                if message is not None and message["parent_header"].get("msg_id") == msg_id:
                    yield from self._take(message, run)
                if run.finished():
                    break
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

    def _run_lost(self) -> KernelDied:
        """The websocket closed: the kernel died, unless lmc shut it down."""
        if self._closed:
            raise ComputerError(f"the {self.language} kernel was shut down") from None
        return KernelDied(None, reason=self._died)

    def _take(self, message: dict[str, Any], run: RunWatch) -> Iterator[KernelEvent]:
        """One message of this run: output is yielded, reply and idle noted in ``run``."""
        run.heard()
        event = self._event(message)
        run.replied = run.replied or event == "reply"
        run.idle = run.idle or event == "idle"
        if isinstance(event, dict):
            yield event

    def _wait(self, run: RunWatch) -> float:
        """Seconds to wait for the next message: up to the next thing to check."""
        wake_at = time.monotonic() + _RECEIVE_SLICE
        due = run.wake_at(self._interrupted_at)
        if due is not None:
            wake_at = min(wake_at, due)
        return max(0.0, wake_at - time.monotonic())

    def _event(self, message: dict[str, Any]) -> dict[str, Any] | str | None:
        """One message of the run: itself to yield, "reply", "idle", or None to skip."""
        channel = message.get("channel")
        msg_type = message["header"].get("msg_type")
        if channel == "shell":
            return "reply" if msg_type == "execute_reply" else None
        if channel == "stdin":
            if msg_type != "input_request":
                return None
            # No keyboard: the answer is an empty line, and the consumer is told.
            with contextlib.suppress(_Lost):  # the next receive says so
                self._send("stdin", "input_reply", {"value": ""}, parent=message["header"])
            return message
        if msg_type == "status":
            return "idle" if message["content"].get("execution_state") == "idle" else None
        return None if msg_type == "execute_input" else message

    # -- the websocket ----------------------------------------------------------------------

    def _send_execute(self, code: str, *, silent: bool) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        return self._send("shell", "execute_request", content)

    def _send(
        self,
        channel: str,
        msg_type: str,
        content: dict[str, Any],
        *,
        parent: dict[str, Any] | None = None,
    ) -> str:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": self.config.username,
            "session": self._session_id,
            "date": datetime.now(UTC).isoformat(),
            "version": "5.3",
        }
        message = {
            "header": header,
            "parent_header": parent or {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }
        from websockets.exceptions import ConnectionClosed

        try:
            self._socket.send(json.dumps(message))
        except ConnectionClosed as exc:
            self._lost()
            raise _Lost from exc
        return msg_id

    def _receive(self, wait: float) -> dict[str, Any] | None:
        """The next message (None: nothing within ``wait`` seconds, or one to skip); notes
        the kernel's death as the gateway reports it. Raises :class:`_Lost` when the
        websocket is gone."""
        from websockets.exceptions import ConnectionClosed

        try:
            frame = self._socket.recv(timeout=wait)
        except TimeoutError:
            return None
        except ConnectionClosed as exc:
            self._lost()
            raise _Lost from exc
        finally:
            self._quick_ack()
        if not isinstance(frame, str):  # binary frames carry buffers (widgets): not for lmc
            return None
        try:
            message = json.loads(frame)
        except ValueError:
            return None
        if not isinstance(message, dict) or not isinstance(message.get("header"), dict):
            return None
        message.setdefault("parent_header", {})
        message.setdefault("content", {})
        if message["header"].get("msg_type") == "status" and message.get("channel") == "iopub":
            state = message["content"].get("execution_state")
            self._restarting = self._restarting or state == "restarting"
            if state in ("restarting", "dead") and self._died is None:
                self._died = (
                    f"the kernel gateway at {self.config.url} reports it {state}"
                    if state == "dead"
                    else f"the kernel gateway at {self.config.url} had to restart it"
                )
        return message

    def _quick_ack(self) -> None:
        """Acknowledge what arrives at once (Linux ``TCP_QUICKACK``, which the kernel turns
        off again now and then). The gateway's tornado does not turn Nagle off: without this
        every run waits ~40 ms for the delayed ACK of its first small message."""
        quickack = getattr(socket, "TCP_QUICKACK", None)
        if quickack is not None and self._socket is not None:
            with contextlib.suppress(OSError, AttributeError):
                self._socket.socket.setsockopt(socket.IPPROTO_TCP, quickack, 1)

    def _read_pending(self) -> None:
        """Read what arrived between runs (a death the gateway reported meanwhile)."""
        if self._socket is None or self._died is not None:
            return
        with contextlib.suppress(_Lost):
            while self._receive(0) is not None:
                pass

    def _lost(self) -> None:
        if self._died is None:
            self._died = f"lost the connection to the kernel gateway at {self.config.url}"
