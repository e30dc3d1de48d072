"""Starting a kernel in the background, once, and waiting for it: shared by local and remote
kernels, which differ only in how they boot."""

from __future__ import annotations

import threading
import time

from lmc.errors import ComputerError

__all__ = ["BackgroundStart"]


class BackgroundStart:
    """``start()`` boots in a thread once; ``wait_ready()`` waits and raises what booting did.

    A subclass sets ``_ready`` (and ``_error`` on failure) from ``_boot`` and names itself with
    ``_start_name`` (the kernel in messages) and ``_thread_name``.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()  # reentrant: interrupt() may run in a signal handler
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: ComputerError | None = None
        self._closed = False
        self.started_at: float | None = None

    @property
    def _start_name(self) -> str:
        raise NotImplementedError

    @property
    def _thread_name(self) -> str:
        raise NotImplementedError

    def _boot(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the kernel in a background thread (no-op if already started or closed)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self.started_at = time.monotonic()
            self._thread = threading.Thread(target=self._boot, name=self._thread_name, daemon=True)
            self._thread.start()

    def launch(self) -> None:
        """Start without what can wait until code comes (a local kernel's sockets); here
        the same as :meth:`start`."""
        self.start()

    def wait_ready(self) -> None:
        """Block until the kernel answers; raise :class:`ComputerError` if it cannot start."""
        self.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        if self._closed:
            raise ComputerError(f"the {self._start_name} kernel was shut down")

    @property
    def ready(self) -> bool:
        """Started and answering (it may have died since)."""
        return self._ready.is_set() and self._error is None and not self._closed
