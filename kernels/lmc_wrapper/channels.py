"""A kernel's five ZeroMQ sockets, bound as its connection file says, and its IOPub thread.

ZeroMQ sockets are not thread-safe, so each has one owner: the main thread reads shell (and
never stdin: lmc's kernels refuse stdin), the control thread reads control and heartbeat,
and the IOPub thread owns the XPUB socket. Any thread publishes through a PUSH socket of its
own into the IOPub thread, which forwards to the XPUB socket with ``XPUB_NODROP``: a fast
printer waits for a slow reader instead of losing messages (the queue between is small, so
memory stays bounded), and answers each new subscription with ``iopub_welcome`` (JEP 65) so a
client knows at once that it hears IOPub.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading

from lmc_wrapper import zmtp as zmq
from lmc_wrapper.wire import WireSession

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Channels", "Publisher", "bind_address"]

#: Each channel's socket type (the kernel's side).
SOCKET_TYPES = {
    "shell": zmq.ROUTER,
    "control": zmq.ROUTER,
    "stdin": zmq.ROUTER,
    "iopub": zmq.XPUB,
    "hb": zmq.ROUTER,
}
#: Serialized IOPub messages queued between a publishing thread and the IOPub thread.
QUEUE_LIMIT = 64
#: Milliseconds a closing socket may spend delivering what it still holds.
LINGER_MS = 1000
#: Milliseconds the IOPub thread gets to forward what is queued when the kernel ends.
STOP_TIMEOUT_MS = 5000
_STOP = b"stop"


def bind_address(transport: str, ip: str, port: int) -> str:
    return f"tcp://{ip}:{port}" if transport == "tcp" else f"ipc://{ip}-{port}"


def _bind(socket: zmq.Socket, transport: str, ip: str, port: int) -> int:
    """Bind ``socket``; a port of 0 picks a free one, which is returned."""
    if port:
        socket.bind(bind_address(transport, ip, port))
        return port
    if transport == "tcp":
        return int(socket.bind_to_random_port(f"tcp://{ip}"))
    port = 1
    while os.path.exists(f"{ip}-{port}"):
        port += 1
    socket.bind(bind_address(transport, ip, port))
    return port


class Channels:
    """The bound sockets; writes the chosen ports back when the file asked for any (port 0)."""

    def __init__(self, context: zmq.Context, connection_file: str) -> None:
        with open(connection_file, encoding="utf-8") as file:
            info: dict[str, Any] = json.load(file)
        self.info = info
        transport = str(info.get("transport", "tcp"))
        ip = str(info.get("ip", "127.0.0.1"))
        self.sockets: dict[str, zmq.Socket] = {}
        chose_ports = False
        for name, kind in SOCKET_TYPES.items():
            socket = context.socket(kind)
            socket.linger = LINGER_MS
            if kind == zmq.XPUB:
                socket.setsockopt(zmq.XPUB_NODROP, 1)
                socket.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscription, for the welcome
            given = int(info.get(f"{name}_port", 0) or 0)
            port = _bind(socket, transport, ip, given)
            chose_ports |= port != given
            info[f"{name}_port"] = port
            self.sockets[name] = socket
        if chose_ports:  # atomically: a client may be polling the file for the ports
            folder, name = os.path.split(connection_file)
            partial = os.path.join(folder, f".{name}.{os.getpid()}")
            with open(partial, "w", encoding="utf-8") as file:
                json.dump(info, file, indent=2)
            os.chmod(partial, 0o600)
            os.replace(partial, connection_file)
        self.wire = WireSession(
            str(info.get("key", "")).encode(), str(info.get("signature_scheme", "hmac-sha256"))
        )

    def close(self) -> None:
        for name in ("shell", "stdin"):
            self.sockets[name].close()


class Publisher:
    """The IOPub thread plus one PUSH socket per publishing thread (see the module doc)."""

    def __init__(self, context: zmq.Context, xpub: zmq.Socket, wire: WireSession) -> None:
        self._xpub = xpub
        self._wire = wire
        self._address = f"inproc://lmc-iopub-{id(self)}"
        self._pull = context.socket(zmq.PULL)
        self._pull.rcvhwm = QUEUE_LIMIT
        self._pull.bind(self._address)
        self._context = context
        self._thread = threading.Thread(target=self._forward, name="iopub", daemon=True)
        self.welcomed = 0

    def pusher(self) -> zmq.Socket:
        """A PUSH socket for one thread (each publishing thread needs its own)."""
        push = self._context.socket(zmq.PUSH)
        push.sndhwm = QUEUE_LIMIT
        push.linger = LINGER_MS
        push.connect(self._address)
        return push

    def start(self) -> None:
        self._thread.start()

    def stop(self, push: zmq.Socket) -> None:
        """Forward what was queued, then end the thread; ``push`` is the caller's socket."""
        push.sndtimeo = STOP_TIMEOUT_MS
        with contextlib.suppress(zmq.Again):
            push.send(_STOP)
        self._thread.join(STOP_TIMEOUT_MS / 1000)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _forward(self) -> None:
        poller = zmq.Poller()
        poller.register(self._pull, zmq.POLLIN)
        poller.register(self._xpub, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._xpub in ready:
                    self._welcome(self._xpub.recv())
                if self._pull in ready and not self._forward_queued():
                    return
        finally:
            self._pull.close()
            self._xpub.close()

    def _forward_queued(self) -> bool:
        """Forward every queued message; False once the stop request came (after the rest)."""
        stopping = False
        while True:
            try:
                frames = self._pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return not stopping
            if frames == [_STOP]:
                stopping = True  # other threads' queues may still hold messages: drain them
            else:
                self._xpub.send_multipart(frames)

    def _welcome(self, event: bytes) -> None:
        if event[:1] != b"\x01":  # an unsubscription
            return
        self.welcomed += 1
        topic = event[1:]
        try:
            self._xpub.send_multipart(
                self._wire.pack("iopub_welcome", {"subscription": topic.decode()}, idents=[topic])
            )
        except (zmq.ZMQError, UnicodeDecodeError) as exc:
            print(f"lmc kernel: no iopub_welcome: {exc}", file=sys.stderr, flush=True)


def parent_pid() -> int | None:
    """The pid a kernel manager asked the kernel to outlive no longer than (JPY_PARENT_PID)."""
    value = os.environ.get("JPY_PARENT_PID", "")
    return int(value) if value.isdigit() and int(value) > 1 else None
