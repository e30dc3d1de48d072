"""The client side of one local kernel's sockets, and one poll over all of them.

The poll also watches file descriptors the caller gives (the kernel process's pidfd, a wake
pipe), so output, the reply, the kernel's death and an interrupt all wake one wait at once;
there is no sleep-polling, except every :data:`RECONNECT_MS` while a socket still waits for a
kernel that has not bound it yet. Sockets are not thread-safe: one thread at a time uses them.

The messages are Jupyter's wire protocol (5.3) (:mod:`lmc.computer.kernel_wire`) over ZMTP
spoken on plain sockets (:mod:`lmc.computer.zmtp`): jupyter_client's client would load
tornado, asyncio, traitlets and dateutil into lmc's process at the first block (~55 ms of CPU,
8 MB), and pyzmq alone ~14 ms and 2 MB.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from lmc.computer.kernel_wire import Channel, WireClient
from lmc.computer.zmtp import ZmtpSocket

__all__ = ["POLLIN", "RECEIVE_QUEUE", "KernelChannels"]

#: IOPub messages read ahead in lmc's process at most (kernels send at most ~256 KB each):
#: a socket is read only when its messages so far were taken, so a slow consumer pushes back
#: on the kernel's side instead.
RECEIVE_QUEUE: Final = 64
#: How soon a socket tries again to reach a kernel that has not bound it yet (milliseconds):
#: a try is one connect() to a path not there yet, and the first block waits on the kernel.
RECONNECT_MS: Final = 2
#: What :meth:`KernelChannels.poll` reports for something ready to read.
POLLIN: Final = select.POLLIN


class KernelChannels:
    """A kernel's shell, IOPub, stdin and control sockets, with one poll."""

    def __init__(self, connection_file: Path, fds: Iterable[int]) -> None:
        client = WireClient(connection_file)
        self.client = client
        self.iopub: Channel = client.iopub_channel
        self.shell: Channel = client.shell_channel
        self.stdin: Channel = client.stdin_channel
        self._sockets: tuple[ZmtpSocket, ...] = tuple(
            channel.socket
            for channel in (self.iopub, self.shell, self.stdin, client.control_channel)
        )
        self._read: tuple[ZmtpSocket, ...] = self._sockets[:3]  # control's replies are unread
        self._fds = tuple(fds)

    def poll(self, milliseconds: int | None) -> dict[Any, int]:
        """What is ready within ``milliseconds`` (None: wait for something): the sockets
        with a whole message waiting, and the caller's file descriptors."""
        deadline = None if milliseconds is None else time.monotonic() + milliseconds / 1000
        while True:
            waiting = [s for s in self._sockets if not s.try_connect()]
            ready: dict[Any, int] = {s: POLLIN for s in self._read if s.has_message()}
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if ready:
                timeout = 0.0
            elif waiting:
                timeout = min(timeout if timeout is not None else 1.0, RECONNECT_MS / 1000)
            watched = [s for s in self._read if s.connected]
            poller = select.poll()
            for fd in (*(s.fileno() for s in watched), *self._fds):
                poller.register(fd, select.POLLIN)
            with contextlib.suppress(InterruptedError):
                events = dict(poller.poll(None if timeout is None else timeout * 1000))
                for socket in watched:
                    if socket.fileno() in events:
                        socket.fill()
                        if socket.has_message():
                            ready[socket] = POLLIN
                ready.update({fd: POLLIN for fd in self._fds if fd in events})
            if ready or (deadline is not None and time.monotonic() >= deadline):
                return ready

    @staticmethod
    def drain(channel: Channel, ready: Mapping[Any, int]) -> Iterator[dict[str, Any]]:
        """The messages waiting on ``channel``, if the poll found it ready."""
        if channel.socket not in ready:
            return
        for _ in range(RECEIVE_QUEUE):
            message = channel.get_msg()
            if message is None:
                return
            yield message

    def send_control(self, msg_type: str, content: dict[str, Any]) -> str:
        message = self.client.session.msg(msg_type, content)
        self.client.control_channel.send(message)
        return str(message["msg_id"])

    def ask_control(
        self, msg_type: str, content: dict[str, Any], timeout: float
    ) -> dict[str, Any] | None:
        """Send a control request and wait up to ``timeout`` seconds for its reply's content
        (other replies waiting there, an interrupt's, are dropped); None if none came."""
        channel = self.client.control_channel
        while channel.get_msg() is not None:  # earlier replies nobody read
            pass
        msg_id = self.send_control(msg_type, content)
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            reply = channel.get_msg()
            if reply is None:
                _wait_readable(channel.socket, left)
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                answer = reply.get("content")
                return answer if isinstance(answer, dict) else {}
        return None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # best effort: the sockets go anyway
            self.client.stop_channels()


def _wait_readable(socket: ZmtpSocket, seconds: float) -> None:
    """Until ``socket`` has something to read, for at most ``seconds`` (a socket still
    waiting for its kernel tries again every :data:`RECONNECT_MS`)."""
    if not socket.try_connect():
        time.sleep(min(seconds, RECONNECT_MS / 1000))
        return
    with contextlib.suppress(InterruptedError):
        select.select([socket.fileno()], [], [], seconds)
