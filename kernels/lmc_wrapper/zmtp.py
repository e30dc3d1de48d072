"""The ZeroMQ sockets lmc's wrapper kernels use, spoken on plain sockets (ZMTP 3.0, NULL).

pyzmq's import is most of a wrapper kernel's start (~25 ms with the modules it pulls in, of a
sandboxed shell kernel's ~60 ms to its first answer) for five bound sockets and two in-process
queues. This module gives base.py and channels.py the same calls (``Context().socket(kind)``,
``bind``, ``send_multipart``, ``recv_multipart``, ``poll``, ``Poller``) on the standard
library, for what they use:

* ROUTER (shell, control, stdin, heartbeat): peers of any kind that talks to a ROUTER (lmc's
  DEALERs, jupyter_client's DEALERs and heartbeat REQ); a message read arrives with its
  peer's identity first, a message sent goes to the peer its first frame names (to nobody,
  silently, when that peer is gone);
* XPUB (IOPub): subscribers' subscriptions arrive as messages (``\\x01`` + topic, verbose, as
  with ``XPUB_VERBOSE``), a message goes to every subscriber whose subscription begins its
  first frame, waiting for a slow reader instead of dropping (``XPUB_NODROP``);
* PUSH/PULL over ``inproc://`` (queues between the kernel's threads, bounded by the high water
  mark; a connect may come before the bind).

One I/O thread per context accepts connections, greets (the 64-byte greeting and READY with
the socket type, https://rfc.zeromq.org/spec/23/) and reads whole messages into each socket's
queue; a socket's owner sends itself (blocking: a kernel's writes are small and its readers
local). A 3.1 peer greeted as 3.0 speaks 3.0, so subscriptions come as messages; a 3.1
SUBSCRIBE command is taken too. Anything else the protocol has (security mechanisms, other
socket types, reconnecting) a kernel's side never needs.
"""

from __future__ import annotations

import _socket
import contextlib
import os
import select
import struct
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = [
    "NOBLOCK",
    "POLLIN",
    "PULL",
    "PUSH",
    "ROUTER",
    "XPUB",
    "XPUB_NODROP",
    "XPUB_VERBOSE",
    "Again",
    "Context",
    "Poller",
    "Socket",
    "ZMQError",
]

ROUTER, XPUB, PULL, PUSH = "ROUTER", "XPUB", "PULL", "PUSH"
POLLIN = 1
NOBLOCK = 1
XPUB_NODROP, XPUB_VERBOSE = 69, 40  # libzmq's option numbers; both are how this XPUB works

_GREETING = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00")
_GREETING += b"\x00" * 32
_MORE, _LONG, _COMMAND = 0x01, 0x02, 0x04
_READ_SIZE = 256 * 1024


class ZMQError(OSError):
    """A socket that cannot do what was asked."""


class Again(ZMQError):
    """Nothing to receive now, or no room to send now (``NOBLOCK``, or the send timeout)."""


def _frames(parts: list[bytes], *, command: bool = False) -> bytes:
    out = bytearray()
    last = len(parts) - 1
    for index, body in enumerate(parts):
        flags = (_MORE if index < last else 0) | (_COMMAND if command else 0)
        if len(body) > 255:
            out += struct.pack("!BQ", flags | _LONG, len(body))
        else:
            out += struct.pack("!BB", flags, len(body))
        out += body
    return bytes(out)


def _ready(kind: str) -> bytes:
    name, value = b"Socket-Type", kind.encode()
    body = b"\x05READY" + bytes([len(name)]) + name + struct.pack("!I", len(value)) + value
    return _frames([body], command=True)


def _properties(body: bytes) -> dict[bytes, bytes]:
    """A READY command's properties (``body`` after its name)."""
    found: dict[bytes, bytes] = {}
    at = 0
    while at < len(body):
        size = body[at]
        name = body[at + 1 : at + 1 + size]
        at += 1 + size
        (length,) = struct.unpack("!I", body[at : at + 4])
        found[name] = body[at + 4 : at + 4 + length]
        at += 4 + length
    return found


class _Queue:
    """A socket's incoming messages, with a pipe readable while any wait (for ``poll``)."""

    def __init__(self, limit: int = 0) -> None:
        self.items: deque[list[bytes]] = deque()
        self.limit = limit  # 0: unbounded
        self.lock = threading.Condition()
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        self._signalled = False

    def fileno(self) -> int:
        return self._read

    def put(self, message: list[bytes], timeout: float | None) -> bool:
        """Queue ``message``; False when there was no room within ``timeout`` (None: wait)."""
        with self.lock:
            full = bool(self.limit) and len(self.items) >= self.limit
            if full and (
                timeout == 0
                or not self.lock.wait_for(lambda: len(self.items) < self.limit, timeout)
            ):
                return False
            self.items.append(message)
            if not self._signalled:
                self._signalled = True
                with contextlib.suppress(OSError):  # closed with its socket: nobody polls it now
                    os.write(self._write, b"!")
            return True

    def take(self) -> list[bytes] | None:
        with self.lock:
            if not self.items:
                return None
            message = self.items.popleft()
            if not self.items and self._signalled:
                self._signalled = False
                with contextlib.suppress(OSError):
                    os.read(self._read, 64)
            self.lock.notify_all()
            return message

    def __len__(self) -> int:
        return len(self.items)

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)


def _wait(sockets: list[Socket], timeout_ms: float | None) -> list[Socket]:
    """The sockets with a message waiting, after at most ``timeout_ms`` (None: until one)."""
    ready = [s for s in sockets if len(s.queue)]
    if ready or timeout_ms == 0:
        return ready
    poller = select.poll()
    for socket in sockets:
        poller.register(socket.queue.fileno(), select.POLLIN)
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    while True:
        left = None if deadline is None else max(0.0, (deadline - time.monotonic()) * 1000)
        poller.poll(left)
        ready = [s for s in sockets if len(s.queue)]
        if ready or (deadline is not None and time.monotonic() >= deadline):
            return ready


class _Peer:
    """One connection to a bound socket: its greeting, then its frames."""

    def __init__(self, connection: _socket.socket) -> None:
        self.connection = connection
        self.buffer = bytearray()
        self.hello = False  # its 64-byte greeting came
        self.greeted = False  # and its READY
        self.identity = b""
        self.parts: list[bytes] = []
        self.subscriptions: list[bytes] = []
        self.lock = threading.Lock()  # one writer at a time

    def send(self, data: bytes) -> bool:
        with self.lock:
            try:
                self.connection.sendall(data)
            except OSError:
                return False
            return True


class Socket:
    """A ROUTER or XPUB bound to addresses, or an in-process PUSH or PULL."""

    def __init__(self, context: Context, kind: str) -> None:
        self.context = context
        self.kind = kind
        self.linger = 0
        self.rcvhwm = 0
        self.sndhwm = 0
        self.sndtimeo = -1
        self.queue = _Queue()
        self._listeners: list[tuple[_socket.socket, str]] = []
        self._peers: dict[bytes, _Peer] = {}
        self._subscribers: list[_Peer] = []
        self._next_identity = 0
        self._target: _Queue | None = None  # PUSH: the queue of the PULL it is connected to
        self._closed = False

    def setsockopt(self, option: int, value: int) -> None:
        """``XPUB_NODROP`` and ``XPUB_VERBOSE`` are how this XPUB always works."""

    # -- addresses ------------------------------------------------------------------------

    def bind(self, address: str) -> None:
        transport, _, where = address.partition("://")
        if transport == "inproc":
            self.queue.close()
            self.queue = self.context.inproc(where)  # a PUSH may have connected first
            self.queue.limit = self.rcvhwm
            return
        self._listen(transport, where)

    def bind_to_random_port(self, address: str) -> int:
        return self._listen("tcp", address.partition("://")[2] + ":0")

    def connect(self, address: str) -> None:
        transport, _, where = address.partition("://")
        if transport != "inproc" or self.kind != PUSH:
            raise ZMQError(f"this socket connects only to inproc://: {address}")
        self._target = self.context.inproc(where)

    def _listen(self, transport: str, where: str) -> int:
        if transport == "ipc":
            listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(where)  # a stale socket file, as libzmq does
            listener.bind(where)
            port, name = 0, where
        elif transport == "tcp":
            host, _, port_text = where.rpartition(":")
            host = host.strip("[]")
            host = "0.0.0.0" if host in ("*", "") else host
            family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
            listener = _socket.socket(family, _socket.SOCK_STREAM)
            listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            listener.bind((host, int(port_text)))
            port, name = int(listener.getsockname()[1]), ""
        else:
            raise ZMQError(f"unsupported transport {transport!r}")
        listener.listen(64)
        self._listeners.append((listener, name))
        self.context.io.listen(listener, self)
        return port

    # -- what the I/O thread hands over ---------------------------------------------------

    def accepted(self, peer: _Peer) -> None:
        """``peer`` greeted with READY: it can be written to now."""
        if self.kind == ROUTER:
            if not peer.identity:
                self._next_identity += 1
                peer.identity = b"\x00" + struct.pack("!I", self._next_identity)
            self._peers[peer.identity] = peer
        elif self.kind == XPUB:
            self._subscribers.append(peer)

    def arrived(self, peer: _Peer, parts: list[bytes]) -> None:
        if self.kind == ROUTER:
            self.queue.put([peer.identity, *parts], None)
        elif self.kind == XPUB and len(parts) == 1 and parts[0][:1] in (b"\x00", b"\x01"):
            self.subscribe(peer, parts[0])

    def subscribe(self, peer: _Peer, event: bytes) -> None:
        topic = event[1:]
        if event[:1] == b"\x01":
            peer.subscriptions.append(topic)
        elif topic in peer.subscriptions:
            peer.subscriptions.remove(topic)
        self.queue.put([event], None)  # verbose: each one, for the kernel's welcome

    def gone(self, peer: _Peer) -> None:
        if self._peers.get(peer.identity) is peer:
            del self._peers[peer.identity]
        if peer in self._subscribers:
            self._subscribers.remove(peer)

    # -- messages -------------------------------------------------------------------------

    def send(self, data: bytes, flags: int = 0) -> None:
        self.send_multipart([data], flags)

    def send_multipart(self, parts: list[bytes], flags: int = 0) -> None:
        if self._closed:
            raise ZMQError("the socket is closed")
        if self.kind == PUSH:
            self._push(list(parts), flags)
        elif self.kind == ROUTER:
            peer = self._peers.get(parts[0])
            if peer is not None and not peer.send(_frames(parts[1:])):
                self.gone(peer)
        elif self.kind == XPUB:
            data = _frames(parts)
            for peer in list(self._subscribers):
                wanted = any(parts[0].startswith(topic) for topic in peer.subscriptions)
                if wanted and not peer.send(data):
                    self.gone(peer)
        else:
            raise ZMQError(f"a {self.kind} socket sends nothing")

    def _push(self, parts: list[bytes], flags: int) -> None:
        if self._target is None:
            raise ZMQError("the PUSH socket is not connected")
        self._target.limit = self._target.limit or self.sndhwm
        timeout = 0.0 if flags & NOBLOCK else None
        if timeout is None and self.sndtimeo >= 0:
            timeout = self.sndtimeo / 1000
        if not self._target.put(parts, timeout):
            raise Again("no room in the queue")

    def recv(self, flags: int = 0) -> bytes:
        return self.recv_multipart(flags)[0]

    def recv_multipart(self, flags: int = 0) -> list[bytes]:
        while True:
            message = self.queue.take()
            if message is not None:
                return message
            if flags & NOBLOCK:
                raise Again("no message")
            _wait([self], None)

    def poll(self, timeout_ms: float | None = None, flags: int = POLLIN) -> int:
        return POLLIN if _wait([self], timeout_ms) else 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for listener, path in self._listeners:
            self.context.io.forget(listener)
            listener.close()
            if path:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        for peer in [*self._peers.values(), *self._subscribers]:
            self.context.io.forget(peer.connection)
            with contextlib.suppress(OSError):
                peer.connection.close()
        self._peers.clear()
        self._subscribers.clear()
        if self.kind != PULL:  # a PULL's queue is its inproc address's, for the context's life
            self.queue.close()


class Poller:
    """Which of the registered sockets have a message waiting."""

    def __init__(self) -> None:
        self._sockets: list[Socket] = []

    def register(self, socket: Socket, flags: int = POLLIN) -> None:
        self._sockets.append(socket)

    def poll(self, timeout_ms: float | None = None) -> list[tuple[Socket, int]]:
        return [(socket, POLLIN) for socket in _wait(self._sockets, timeout_ms)]


class _IO:
    """The context's thread: accepts, greets and reads for every bound socket."""

    def __init__(self) -> None:
        self._poller = select.poll()
        self._owners: dict[int, Callable[[], None]] = {}
        self._changes: list[tuple[int, bool]] = []  # (fd, watch it): applied by the thread
        self._lock = threading.Lock()
        self._wake_read, self._wake_write = os.pipe()
        self._poller.register(self._wake_read, select.POLLIN)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="zmtp-io", daemon=True)
        self._thread.start()

    def listen(self, listener: _socket.socket, owner: Socket) -> None:
        self._watch(listener.fileno(), lambda: self._accept(listener, owner))

    def forget(self, connection: _socket.socket) -> None:
        fd = connection.fileno()
        if fd < 0:
            return
        with self._lock:
            self._owners.pop(fd, None)
            self._changes.append((fd, False))
        self._wake()

    def stop(self) -> None:
        self._stopping = True
        self._wake()
        self._thread.join(5)
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"!")

    def _watch(self, fd: int, handler: Callable[[], None]) -> None:
        with self._lock:
            self._owners[fd] = handler
            self._changes.append((fd, True))
        self._wake()

    def _apply_changes(self) -> None:
        with self._lock:
            changes, self._changes = self._changes, []
        for fd, watch in changes:
            with contextlib.suppress(KeyError, ValueError, OSError):
                if watch:
                    self._poller.register(fd, select.POLLIN)
                else:
                    self._poller.unregister(fd)

    def _run(self) -> None:
        while not self._stopping:
            self._apply_changes()
            for fd, _events in self._poller.poll():
                if fd == self._wake_read:
                    with contextlib.suppress(OSError):
                        os.read(self._wake_read, 4096)
                    continue
                with self._lock:
                    handler = self._owners.get(fd)
                if handler is not None:
                    handler()

    def _accept(self, listener: _socket.socket, owner: Socket) -> None:
        try:
            fd, _address = listener._accept()  # type: ignore[attr-defined]
        except OSError:
            return
        connection = _socket.socket(fileno=fd)
        if listener.family in (_socket.AF_INET, _socket.AF_INET6):
            connection.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        peer = _Peer(connection)
        if not peer.send(_GREETING + _ready(owner.kind)):
            connection.close()
            return
        self._watch(fd, lambda: self._read(peer, owner))

    def _read(self, peer: _Peer, owner: Socket) -> None:
        try:
            data = peer.connection.recv(_READ_SIZE)
        except OSError:
            data = b""
        if data:
            peer.buffer += data
            try:
                _parse(peer, owner)
                return
            except (ValueError, struct.error):  # not ZMTP 3 with NULL: the peer is dropped
                pass
        self.forget(peer.connection)
        owner.gone(peer)
        peer.connection.close()


def _parse(peer: _Peer, owner: Socket) -> None:
    buffer = peer.buffer
    at = 0
    if not peer.hello:
        if len(buffer) < 64:
            return
        if buffer[0] != 0xFF or buffer[10] < 3 or bytes(buffer[12:32]).rstrip(b"\x00") != b"NULL":
            raise ValueError("not a ZMTP 3 peer with NULL security")
        peer.hello = True
        at = 64
    while len(buffer) - at >= 2:
        flags = buffer[at]
        head = 9 if flags & _LONG else 2
        if len(buffer) - at < head:
            break
        size = int.from_bytes(buffer[at + 1 : at + head], "big")
        if len(buffer) - at < head + size:
            break
        body = bytes(buffer[at + head : at + head + size])
        at += head + size
        if flags & _COMMAND:
            _command(peer, owner, body)
            continue
        peer.parts.append(body)
        if not flags & _MORE:
            parts, peer.parts = peer.parts, []
            owner.arrived(peer, parts)
    del buffer[:at]


def _command(peer: _Peer, owner: Socket, body: bytes) -> None:
    name = body[1 : 1 + body[0]] if body else b""
    rest = body[1 + len(name) :]
    if name == b"READY" and not peer.greeted:
        peer.greeted = True
        peer.identity = _properties(rest).get(b"Identity", b"")
        owner.accepted(peer)
    elif name in (b"SUBSCRIBE", b"CANCEL") and owner.kind == XPUB:  # a 3.1 peer's way
        owner.subscribe(peer, (b"\x01" if name == b"SUBSCRIBE" else b"\x00") + rest)


class Context:
    """The sockets of one kernel, with their I/O thread and in-process queues."""

    def __init__(self) -> None:
        self.io = _IO()
        self._inproc: dict[str, _Queue] = {}
        self._lock = threading.Lock()

    def socket(self, kind: str) -> Socket:
        if kind not in (ROUTER, XPUB, PULL, PUSH):
            raise ZMQError(f"unsupported socket type {kind}")
        return Socket(self, kind)

    def inproc(self, name: str) -> _Queue:
        """The queue behind ``inproc://name``, made by its first bind or connect."""
        with self._lock:
            queue = self._inproc.get(name)
            if queue is None:
                queue = self._inproc[name] = _Queue()
            return queue

    def term(self) -> None:
        self.io.stop()
