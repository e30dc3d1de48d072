"""One long-lived thread that starts every kernel process.

bubblewrap's ``--die-with-parent`` (``PR_SET_PDEATHSIG``) fires when the *thread* that
started it ends, not the process. Kernels start from short-lived threads (so that start-up
hides behind other work), which would kill each sandbox moments after it started. So the
process is started here instead, from a daemon thread that lives as long as lmc: the
sandbox dies with lmc (SIGKILL included) and never before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["launch"]

T = TypeVar("T")


class _Launcher:
    """The thread and its queue of calls, started on first use."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            call, future = self._requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to the caller, who raises it
                future.set_exception(exc)

    def launch(self, call: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="lmc-kernel-launcher", daemon=True
                )
                self._thread.start()
        future: Future[T] = Future()
        self._requests.put((call, future))
        return future.result()


_launcher = _Launcher()


def launch(call: Callable[[], T]) -> T:
    """Run ``call`` (which starts a process) on the launcher thread; return its result."""
    return _launcher.launch(call)
