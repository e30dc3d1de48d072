"""The client side of one local kernel's ZeroMQ sockets, and one poll over all of them.

The poll also watches file descriptors the caller gives (the kernel process's pidfd, a wake
pipe), so output, the reply, the kernel's death and an interrupt all wake one wait at once;
there is no sleep-polling. Sockets are not thread-safe: one thread at a time uses them.

The messages are Jupyter's wire protocol (5.3) spoken with pyzmq alone
(:mod:`lmc.computer.kernel_wire`): jupyter_client's client would load tornado, asyncio,
traitlets and dateutil into lmc's process at the first block (~55 ms of CPU, 8 MB).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from lmc.computer.kernel_wire import Channel, WireClient

__all__ = ["RECEIVE_QUEUE", "KernelChannels"]

#: IOPub messages that may wait in lmc's process (kernels send at most ~256 KB each).
RECEIVE_QUEUE: Final = 64
#: How soon a socket tries again to reach a kernel that has not bound it yet (milliseconds).
RECONNECT_MS: Final = 10


class KernelChannels:
    """A kernel's shell, IOPub, stdin and control sockets on a context of their own, with one
    poller."""

    def __init__(self, connection_file: Path, fds: Iterable[int]) -> None:
        import zmq

        self._context: Any = zmq.Context()
        try:
            # Few messages queue here however fast a kernel prints: memory stays bounded, and
            # a slow consumer pushes back on the kernel's side instead.
            self._context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
            # A kernel still booting has not bound its sockets yet: ZeroMQ tries again every
            # RECONNECT_IVL (100 ms by default, a tenth of a second on every first run).
            self._context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
            client = WireClient(connection_file, self._context)
        except BaseException:
            self._context.destroy(linger=0)
            raise
        self.client = client
        self.iopub: Channel = client.iopub_channel
        self.shell: Channel = client.shell_channel
        self.stdin: Channel = client.stdin_channel
        self._poller: Any = zmq.Poller()
        for channel in (self.iopub, self.shell, self.stdin):
            self._poller.register(channel.socket, zmq.POLLIN)
        for fd in fds:
            self._poller.register(fd, zmq.POLLIN)

    def poll(self, milliseconds: int | None) -> dict[Any, int]:
        """What is ready within ``milliseconds`` (None: wait for something)."""
        return dict(self._poller.poll(milliseconds))

    @staticmethod
    def drain(channel: Channel, ready: Mapping[Any, int]) -> Iterator[dict[str, Any]]:
        """The messages waiting on ``channel``, if the poll found it ready."""
        if channel.socket not in ready:
            return
        while True:
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
            if not channel.socket.poll(int(left * 1000) + 1):
                continue
            reply = channel.get_msg()
            if reply is not None and reply.get("parent_header", {}).get("msg_id") == msg_id:
                answer = reply.get("content")
                return answer if isinstance(answer, dict) else {}
        return None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # best effort: the sockets go with the context
            self.client.stop_channels()
        self._context.destroy(linger=0)
