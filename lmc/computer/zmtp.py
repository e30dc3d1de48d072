"""The client end of a ZeroMQ connection (ZMTP 3.0, NULL security), on a plain socket.

lmc's side of a local kernel is four sockets (three DEALERs and a SUB) that each connect to one
socket the kernel bound: no routing, no reconnection policy beyond "try again in 10 ms", one
peer each. pyzmq (its Python layers, pickle among them, and libzmq's I/O thread) cost lmc's
process ~14 ms of CPU at the first block and ~2 MB of private memory for that; this speaks the
protocol itself (https://rfc.zeromq.org/spec/23/): the 64-byte greeting, the READY command
with the socket type (and the DEALER's identity), then frames of ``flags, size, body``. A SUB
subscribes to everything with the 3.0 message ``\\x01``, which a 3.1 peer also accepts from a
peer that said 3.0.

Messages sent before the connection is up wait in order, as a DEALER's would; a message
that arrives is read whole before the poll reports it; a peer that goes away is connected
to again, as ZeroMQ does (a kernel's death is seen by its pidfd, not here).
"""

from __future__ import annotations

import contextlib
import errno
import socket
import struct
import time
from collections import deque
from typing import Final

__all__ = ["GREETING_SIZE", "ZmtpError", "ZmtpSocket", "frame"]

#: The greeting: signature, version 3.0, mechanism NULL, as-server 0, filler.
GREETING_SIZE: Final = 64
_GREETING: Final = (
    b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
)
_MORE: Final = 0x01
_LONG: Final = 0x02
_COMMAND: Final = 0x04
#: Seconds a connected peer gets to greet back (libzmq answers from its own I/O thread).
HANDSHAKE_TIMEOUT: Final = 5.0
#: Bytes read from the socket at a time, at most (what waits beyond stays in the kernel).
READ_SIZE: Final = 256 * 1024


class ZmtpError(OSError):
    """The peer spoke something else than ZMTP 3 with NULL security."""


def frame(body: bytes, *, more: bool = False, command: bool = False) -> bytes:
    """One frame on the wire: flags, a 1- or 8-byte size, the body."""
    flags = (_MORE if more else 0) | (_COMMAND if command else 0)
    if len(body) > 255:
        return struct.pack("!BQ", flags | _LONG, len(body)) + body
    return struct.pack("!BB", flags, len(body)) + body


def _ready(kind: str, identity: bytes) -> bytes:
    properties = [(b"Socket-Type", kind.encode("ascii"))]
    if kind == "DEALER":
        properties.append((b"Identity", identity))
    body = b"\x05READY" + b"".join(
        bytes([len(name)]) + name + struct.pack("!I", len(value)) + value
        for name, value in properties
    )
    return frame(body, command=True)


class ZmtpSocket:
    """A DEALER or SUB connected to ``address`` (``ipc://PATH`` or ``tcp://HOST:PORT``)."""

    def __init__(self, kind: str, address: str, identity: bytes = b"") -> None:
        if kind not in ("DEALER", "SUB"):
            raise ValueError(f"unsupported socket type {kind}")
        self.kind = kind
        self._address = address
        self._identity = identity
        self._socket: socket.socket | None = None
        self._buffer = bytearray()
        self._parts: list[bytes] = []  # the frames of the message being read
        self._messages: deque[list[bytes]] = deque()
        self._waiting: list[bytes] = []  # sent before the connection was up
        self._closed = False

    # -- connection ---------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._socket is not None

    def fileno(self) -> int:
        return -1 if self._socket is None else self._socket.fileno()

    def try_connect(self) -> bool:
        """Connect and greet if the peer is there now; False (try again later) if not."""
        if self._closed or self._socket is not None:
            return self._socket is not None
        try:
            connection = self._open()
        except OSError:
            return False  # not bound yet, refused, gone: as ZeroMQ, try again later
        try:
            self._greet(connection)
        except OSError:
            connection.close()
            return False
        connection.setblocking(False)
        self._socket = connection
        waiting, self._waiting = self._waiting, []
        for data in waiting:
            self._write(data)
        return True

    def _open(self) -> socket.socket:
        transport, _, where = self._address.partition("://")
        if transport == "ipc":
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target: str | tuple[str, int] = where
        elif transport == "tcp":
            host, _, port = where.rpartition(":")
            connection = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            target = (host.strip("[]"), int(port))
        else:
            raise ZmtpError(f"unsupported transport {transport!r}")
        try:
            connection.settimeout(HANDSHAKE_TIMEOUT)
            connection.connect(target)
        except BaseException:
            connection.close()
            raise
        if transport == "tcp":
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    def _greet(self, connection: socket.socket) -> None:
        connection.sendall(_GREETING + _ready(self.kind, self._identity))
        greeting = _read_exactly(connection, GREETING_SIZE)
        if greeting[0] != 0xFF or not greeting[9] & 1 or greeting[10] < 3:
            raise ZmtpError("the peer does not speak ZMTP 3")
        if greeting[12:32].rstrip(b"\x00") != b"NULL":
            raise ZmtpError("the peer wants a security mechanism other than NULL")
        # The peer's READY: a command frame (short or long), read and let go.
        flags = _read_exactly(connection, 1)[0]
        size_bytes = 8 if flags & _LONG else 1
        size = int.from_bytes(_read_exactly(connection, size_bytes), "big")
        body = _read_exactly(connection, size)
        if not flags & _COMMAND or not body.startswith(b"\x05READY"):
            raise ZmtpError("the peer did not send READY")
        if self.kind == "SUB":
            connection.sendall(frame(b"\x01"))  # subscribe to every message (ZMTP 3.0)

    def _drop(self) -> None:
        """The peer went away: connect again on the next try; a half-read message is lost."""
        if self._socket is not None:
            self._socket.close()
        self._socket = None
        self._buffer.clear()
        self._parts.clear()

    def close(self) -> None:
        self._closed = True
        self._drop()
        self._messages.clear()
        self._waiting.clear()

    # -- messages -----------------------------------------------------------------------

    def send_multipart(self, parts: list[bytes]) -> None:
        last = len(parts) - 1
        data = b"".join(frame(part, more=i < last) for i, part in enumerate(parts))
        if self.kind == "SUB" or self._closed:
            return  # a SUB sends nothing; a closed socket drops it, as ZeroMQ with linger 0
        if self._socket is None:
            self._waiting.append(data)
            return
        self._write(data)

    def _write(self, data: bytes) -> None:
        """All of ``data``, waiting for room when the peer is slow to read."""
        assert self._socket is not None
        view = memoryview(data)
        while view:
            try:
                sent = self._socket.send(view)
            except BlockingIOError:
                _wait_writable(self._socket)
                continue
            except OSError:
                self._drop()  # the peer is gone: what it did not get is lost, as in ZeroMQ
                return
            view = view[sent:]

    def has_message(self) -> bool:
        return bool(self._messages)

    def recv(self) -> list[bytes] | None:
        """A whole message waiting here, or None."""
        if not self._messages:
            self.fill()
        return self._messages.popleft() if self._messages else None

    def fill(self) -> None:
        """Read what the socket holds now (at most :data:`READ_SIZE`) into whole messages."""
        if self._socket is None:
            return
        try:
            data = self._socket.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop()
            return
        if not data:
            self._drop()
            return
        self._buffer += data
        self._parse()

    def _parse(self) -> None:
        buffer = self._buffer
        at = 0
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
                continue  # PING and the like (heartbeats are off): nothing to answer
            self._parts.append(body)
            if not flags & _MORE:
                self._messages.append(self._parts)
                self._parts = []
        del buffer[:at]


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError(errno.ECONNRESET, "the peer closed the connection")
        data += chunk
    return bytes(data)


def _wait_writable(connection: socket.socket) -> None:
    import select

    with contextlib.suppress(InterruptedError):
        select.select([], [connection], [], 1.0)
    time.sleep(0)  # let other threads run while the peer catches up
