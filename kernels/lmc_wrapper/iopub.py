"""IOPub that makes a fast printer wait for a slow reader instead of losing its messages.

A kernel's IOPub is a ZeroMQ XPUB socket, and such a socket drops messages once about a
thousand wait for a slow subscriber. Printing hundreds of MB while lmc (or the person's
terminal behind it) reads more slowly lost output, and when the lost message was the run's
idle status, the run never ended. With ``XPUB_NODROP`` the send waits instead: the IOPub
thread waits for lmc, ipykernel's stream flush waits for the IOPub thread, and so ``print``
waits. Memory stays bounded on both sides and nothing is lost. Used by the Python kernel,
which loads this file by path, so ``kernels/`` never lands on its sys.path (the wrapper
kernels' own IOPub thread, ``channels.py``, sets the same option).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["hold_output_for_slow_readers"]


def hold_output_for_slow_readers(app: Any) -> None:
    """Set ``XPUB_NODROP`` on an initialized ``IPKernelApp``'s IOPub socket.

    The option is set from the IOPub thread, which owns the socket (ZeroMQ sockets are not
    thread-safe).
    """
    import zmq

    thread = app.iopub_thread
    done = threading.Event()

    def apply() -> None:
        try:
            thread.socket.setsockopt(zmq.XPUB_NODROP, 1)
        finally:
            done.set()

    thread.io_loop.add_callback(apply)
    done.wait(10)
