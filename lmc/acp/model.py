"""The in-process model of an ``lmc acp`` process: opened once, shared by its sessions.

llama.cpp holds one context, so the sessions take turns on it (the same fair gate as
``lmc serve``). Opening it takes a while, so it starts at once, in the background, while the
editor initializes and opens a session; the first prompt waits for it. A model that cannot
be opened is that prompt's error (and the next one's), not a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from lmc.backends.base import Backend
from lmc.errors import LmcError
from lmc.server.turns import Gate, TurnTakingBackend

__all__ = ["SharedModel"]


class SharedModel:
    """One model, opened by ``open_model`` the first time it is needed."""

    def __init__(self, open_model: Callable[[], Backend]) -> None:
        self._open = open_model
        self._lock = threading.Lock()
        self._backend: Backend | None = None
        self._error: LmcError | None = None
        self._closed = False
        self._gate = Gate()

    def start(self) -> None:
        """Begin opening it in the background."""
        threading.Thread(target=self._quietly, name="model-load", daemon=True).start()

    def _quietly(self) -> None:
        try:
            self.get()
        except LmcError:
            pass  # kept, and raised to the first prompt

    def get(self) -> Backend:
        with self._lock:
            if self._closed:
                raise LmcError("lmc acp is closing")
            if self._backend is None and self._error is None:
                try:
                    self._backend = self._open()
                except LmcError as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._backend is not None
            return self._backend

    def for_session(self) -> Backend:
        """A session's view: generations wait their turn; closing it leaves the model open."""
        return TurnTakingBackend(self.get(), self._gate)

    def close(self) -> None:
        """Free the model, unless it is still being opened (lmc is exiting then anyway)."""
        if not self._lock.acquire(timeout=1.0):
            return
        try:
            self._closed = True
            backend, self._backend = self._backend, None
            if backend is not None:
                backend.close()
        finally:
            self._lock.release()
