"""A Jupyter kernel (messaging protocol 5.3) on the standard library, for lmc's wrapper kernels.

ipykernel brings IPython, traitlets applications, tornado and asyncio, about 0.3 s of start
and 35 MB per kernel, for kernels that only relay a child process. This base answers what
lmc, jupyter_client's clients and the Kernel/Enterprise Gateways send:

* shell: ``execute_request`` (busy, ``execute_input``, the subclass's output, the reply,
  idle; after an error with ``stop_on_error``, execute requests already waiting are answered
  ``aborted``), ``kernel_info``, ``is_complete`` (``unknown``), ``complete`` (no matches),
  ``inspect`` (not found), ``history`` (empty), ``comm_info`` (no comms), ``connect``,
  ``comm_open`` (closed at once: no comm targets), ``shutdown``;
* control (its own thread, so it answers while code runs): ``kernel_info``, ``shutdown``
  (ends the child's session, even mid-run, and the kernel), ``interrupt`` (SIGINT to itself,
  as ``interrupt_mode: signal`` would), and the stateless requests above;
* heartbeat: echoed from the control thread;
* any other ``*_request``: an error reply with ename ``UnknownMessageType``.

Every request is wrapped in busy/idle status on IOPub with the request as parent, from either
channel (Jupyter Server nudges on both until it hears IOPub). SIGINT is ignored between runs;
a subclass forwards it while its code runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

from lmc_wrapper import zmtp as zmq
from lmc_wrapper.channels import Channels, Publisher, parent_pid
from lmc_wrapper.wire import PROTOCOL_VERSION, Message, WireError

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any

    Handler = Callable[[Message], dict[str, Any]]

__all__ = ["KernelBase", "main"]

NO_DATA: dict[str, Any] = {"data": {}, "metadata": {}}
#: Milliseconds between checks that the kernel manager is still there (JPY_PARENT_PID).
PARENT_POLL_MS = 1000


class KernelBase:
    """One kernel process. A subclass sets the class attributes and implements
    :meth:`do_execute` (it publishes with :meth:`publish`) and :meth:`do_shutdown`."""

    implementation = "lmc"
    implementation_version = "0.1.0"
    banner = ""
    language_info: dict[str, Any] = {}  # noqa: RUF012 - replaced, never mutated

    def __init__(self, connection_file: str) -> None:
        self.execution_count = 0
        self.stopping = False
        self._aborting = False
        self._parent: dict[str, Any] = {}  # the header of the shell request being handled
        self._context: zmq.Context = zmq.Context()
        self._channels = Channels(self._context, connection_file)
        self.wire = self._channels.wire
        self.kernel_id = os.path.basename(connection_file).removesuffix(".json")
        sockets = self._channels.sockets
        self._publisher = Publisher(self._context, sockets["iopub"], self.wire)
        self._main_push = self._publisher.pusher()
        self._control_push = self._publisher.pusher()
        self._wake_address = f"inproc://lmc-wake-{id(self)}"
        self._wake = self._context.socket(zmq.PULL)
        self._wake.bind(self._wake_address)
        self._stop_control = self._context.socket(zmq.PUSH)
        self._stop_control.connect(f"inproc://lmc-control-stop-{id(self)}")
        self._control = threading.Thread(target=self._serve_control, name="control", daemon=True)
        self._handlers: dict[str, Handler] = {
            "kernel_info_request": self._kernel_info,
            "is_complete_request": lambda msg: {"status": "unknown"},
            "complete_request": self._complete,
            "inspect_request": lambda msg: {"status": "ok", "found": False, **NO_DATA},
            "history_request": lambda msg: {"status": "ok", "history": []},
            "comm_info_request": lambda msg: {"status": "ok", "comms": {}},
            "connect_request": self._connect,
        }

    # -- what a subclass provides ---------------------------------------------------------

    def do_execute(self, code: str, silent: bool) -> dict[str, Any]:
        """Run ``code``; the ``execute_reply`` content (status, and ename/evalue/traceback)."""
        raise NotImplementedError

    def do_shutdown(self) -> None:
        """End whatever the kernel started (called on the main thread, once)."""

    def kill_child(self) -> None:
        """End the running code's processes at once; safe from any thread (shutdown)."""

    # -- running --------------------------------------------------------------------------

    def serve(self) -> None:
        """Answer requests until a shutdown request; then end everything and return."""
        self._publisher.start()
        self._control.start()
        self._publish_status("starting", {})
        shell = self._channels.sockets["shell"]
        poller = zmq.Poller()
        poller.register(shell, zmq.POLLIN)
        poller.register(self._wake, zmq.POLLIN)
        try:
            while not self.stopping:
                ready = dict(poller.poll())
                if shell in ready:
                    self._receive(shell, self._dispatch_shell)
        finally:
            self._close()

    def publish(self, msg_type: str, content: dict[str, Any]) -> None:
        """Send an IOPub message from the main thread, the current shell request as parent."""
        self._publish(self._main_push, msg_type, content, self._parent)

    def _publish(
        self,
        push: zmq.Socket,
        msg_type: str,
        content: dict[str, Any],
        parent: dict[str, Any],
    ) -> None:
        topic = f"kernel.{self.kernel_id}.{msg_type}".encode()
        push.send_multipart(self.wire.pack(msg_type, content, parent, idents=[topic]))

    def _publish_status(
        self, state: str, parent: dict[str, Any], push: zmq.Socket | None = None
    ) -> None:
        self._publish(push or self._main_push, "status", {"execution_state": state}, parent)

    def _receive(self, socket: zmq.Socket, dispatch: Callable[[Message], None]) -> None:
        self._handle(socket.recv_multipart(), dispatch)

    def _handle(self, frames: list[bytes], dispatch: Callable[[Message], None]) -> None:
        try:
            message = self.wire.unpack(frames)
        except WireError as exc:
            print(f"lmc kernel: dropped a message: {exc}", file=sys.stderr, flush=True)
            return
        try:
            dispatch(message)
        except Exception as exc:  # a bug of the kernel's own: logged, the kernel goes on
            import traceback  # only on a failure: linecache, tokenize and more

            print(f"lmc kernel: failed on a {message.msg_type}:", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)

    def _reply(self, socket: zmq.Socket, request: Message, content: dict[str, Any]) -> None:
        reply_type = request.msg_type.removesuffix("_request") + "_reply"
        metadata = {"status": content.get("status", "ok")}
        socket.send_multipart(
            self.wire.pack(
                reply_type, content, request.header, idents=request.idents, metadata=metadata
            )
        )

    # -- shell ----------------------------------------------------------------------------

    def _dispatch_shell(self, message: Message) -> None:
        shell = self._channels.sockets["shell"]
        self._parent = message.header
        self._publish_status("busy", message.header)
        waiting: list[list[bytes]] = []
        try:
            msg_type = message.msg_type
            if msg_type == "execute_request":
                waiting = self._execute_request(shell, message)
            elif msg_type == "shutdown_request":
                self._shutdown_request(shell, message, self._main_push)
            elif msg_type == "comm_open":
                comm_id = message.content.get("comm_id", "")
                self.publish("comm_close", {"comm_id": comm_id, "data": {}})
            else:
                self._answer(shell, message)
        finally:
            self._publish_status("idle", message.header)
        if waiting:
            self._abort(waiting)

    def _execute_request(self, shell: zmq.Socket, message: Message) -> list[list[bytes]]:
        """Run the request; after an error with ``stop_on_error``, the requests that were
        already waiting when it ended (taken before the reply, which lets the client send more)."""
        if self._aborting:
            self._reply(shell, message, {"status": "aborted", "execution_count": None})
            return []
        content = message.content
        code = str(content.get("code", ""))
        silent = bool(content.get("silent", False))
        if not silent:
            self.execution_count += 1
            self.publish("execute_input", {"code": code, "execution_count": self.execution_count})
        try:
            reply = self.do_execute(code, silent)
        except Exception as exc:  # a bug of the kernel's own: an error reply, not a dead kernel
            import traceback

            lines = traceback.format_exception(exc)
            print("".join(lines), file=sys.stderr, flush=True)
            error = {"ename": type(exc).__name__, "evalue": str(exc), "traceback": lines}
            self.publish("error", error)
            reply = {"status": "error", **error}
        reply.setdefault("execution_count", self.execution_count)
        waiting: list[list[bytes]] = []
        stop_on_error = bool(content.get("stop_on_error", True))
        if reply["status"] == "error" and stop_on_error and not silent:
            while shell.poll(0, zmq.POLLIN):
                waiting.append(shell.recv_multipart())
        self._reply(shell, message, reply)
        return waiting

    def _abort(self, waiting: list[list[bytes]]) -> None:
        """Handle requests that waited behind an error: execute requests are ``aborted``."""
        self._aborting = True
        try:
            for frames in waiting:
                self._handle(frames, self._dispatch_shell)
        finally:
            self._aborting = False

    # -- control --------------------------------------------------------------------------

    def _serve_control(self) -> None:
        sockets = self._channels.sockets
        control, heartbeat = sockets["control"], sockets["hb"]
        stop = self._context.socket(zmq.PULL)
        stop.bind(f"inproc://lmc-control-stop-{id(self)}")
        poller = zmq.Poller()
        for socket in (control, heartbeat, stop):
            poller.register(socket, zmq.POLLIN)
        parent = parent_pid()
        parent_alive = parent is not None and os.getppid() == parent
        try:
            while True:
                ready = dict(poller.poll(PARENT_POLL_MS if parent_alive else None))
                if heartbeat in ready:
                    heartbeat.send_multipart(heartbeat.recv_multipart())
                if control in ready:
                    self._receive(control, self._dispatch_control)
                if stop in ready or self.stopping:
                    return
                if parent_alive and os.getppid() != parent:
                    print("lmc kernel: the kernel manager is gone", file=sys.stderr, flush=True)
                    self._begin_stop()
                    return
        finally:
            for socket in (control, heartbeat, stop, self._control_push):
                socket.close()

    def _dispatch_control(self, message: Message) -> None:
        control = self._channels.sockets["control"]
        push = self._control_push
        self._publish_status("busy", message.header, push)
        try:
            if message.msg_type == "shutdown_request":
                self._shutdown_request(control, message, push)
            elif message.msg_type == "interrupt_request":
                os.kill(os.getpid(), signal.SIGINT)
                self._reply(control, message, {"status": "ok"})
            else:
                self._answer(control, message)
        finally:
            self._publish_status("idle", message.header, push)

    # -- requests either channel answers --------------------------------------------------

    def _answer(self, socket: zmq.Socket, message: Message) -> None:
        msg_type = message.msg_type
        handler = self._handlers.get(msg_type)
        if handler is not None:
            self._reply(socket, message, handler(message))
        elif msg_type.endswith("_request"):
            why = f"the {self.implementation} kernel does not handle {msg_type}"
            error = {"ename": "UnknownMessageType", "evalue": why, "traceback": [why]}
            self._reply(socket, message, {"status": "error", **error})
        else:  # comm_msg, comm_close, input_reply...: nothing to answer
            print(f"lmc kernel: ignored a {msg_type or 'typeless'} message", file=sys.stderr)

    def _shutdown_request(self, socket: zmq.Socket, message: Message, push: zmq.Socket) -> None:
        content = {"status": "ok", "restart": bool(message.content.get("restart", False))}
        self._reply(socket, message, content)
        self._publish(push, "shutdown_reply", content, message.header)
        self._begin_stop()

    def _begin_stop(self) -> None:
        """End the code that runs (the main thread then finds ``stopping``) and wake the main
        thread (any thread may call this)."""
        self.stopping = True
        self.kill_child()
        if threading.current_thread() is not threading.main_thread():
            wake = self._context.socket(zmq.PUSH)
            wake.connect(self._wake_address)
            wake.send(b"stop")
            wake.close()

    def _kernel_info(self, message: Message) -> dict[str, Any]:
        return {
            "status": "ok",
            "protocol_version": PROTOCOL_VERSION,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
            "language_info": self.language_info,
            "banner": self.banner,
            "help_links": [],
            "debugger": False,
        }

    def _complete(self, message: Message) -> dict[str, Any]:
        cursor = message.content.get("cursor_pos")
        if not isinstance(cursor, int):
            cursor = len(str(message.content.get("code", "")))
        return {
            "status": "ok",
            "matches": [],
            "cursor_start": cursor,
            "cursor_end": cursor,
            "metadata": {},
        }

    def _connect(self, message: Message) -> dict[str, Any]:
        info = self._channels.info
        ports = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
        return {"status": "ok", **{name: info[name] for name in ports}}

    # -- the end --------------------------------------------------------------------------

    def _close(self) -> None:
        self.stopping = True
        try:
            self.do_shutdown()
        finally:
            with contextlib.suppress(zmq.Again):  # the control thread may be over already
                self._stop_control.send(b"stop", zmq.NOBLOCK)
            self._control.join(5)
            self._publisher.stop(self._main_push)
            if self._control.is_alive() or self._publisher.alive:
                # A thread is stuck (an IOPub reader that stopped reading): terminating the
                # context would wait for its sockets forever.
                print("lmc kernel: a thread did not end; exiting", file=sys.stderr, flush=True)
                os._exit(0)
            for socket in (self._main_push, self._wake, self._stop_control):
                socket.close()
            self._channels.close()
            self._context.term()


def main(kernel_class: type[KernelBase], argv: list[str]) -> None:
    """``python3 SCRIPT -f CONNECTION_FILE``, as in kernel.json: serve until shut down."""
    if len(argv) != 3 or argv[1] != "-f":
        print(f"usage: {argv[0]} -f CONNECTION_FILE", file=sys.stderr)
        raise SystemExit(2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until a run forwards it to the code
    try:
        kernel = kernel_class(argv[2])
    except Exception as exc:  # no bash, no node, a bad connection file: one line in the log
        print(f"lmc kernel: cannot start with {argv[2]}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    kernel.serve()
