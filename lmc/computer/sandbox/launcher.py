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
from typing import Any, Generic, TypeVar

__all__ = ["launch"]

T = TypeVar("T")


class _Result(Generic[T]):
    """A call's result (or exception) handed from the launcher thread to the caller.
    (concurrent.futures would do, but it imports logging: 2-5 ms of every ``lmc run``.)"""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self, call: Callable[[], T]) -> None:
        try:
            self._value = call()
        except BaseException as exc:  # handed to the caller, who raises it
            self._error = exc
        finally:
            self._done.set()

    def get(self) -> T:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: the call returned


class _Launcher:
    """The thread and its queue of calls, started on first use."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], _Result[Any]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            call, result = self._requests.get()
            result.run(call)

    def launch(self, call: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="lmc-kernel-launcher", daemon=True
                )
                self._thread.start()
        result: _Result[T] = _Result()
        self._requests.put((call, result))
        return result.get()


_launcher = _Launcher()


def launch(call: Callable[[], T]) -> T:
    """Run ``call`` (which starts a process) on the launcher thread; return its result."""
    return _launcher.launch(call)
