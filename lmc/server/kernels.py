"""Kernels for ``lmc serve``'s connections: started on a connection's first code, not on
connect, and no more than a fixed number for all connections together.

An Interpreter starts its python kernel when a turn begins (to hide the start behind the
model's writing). On a server that is a kernel per client that merely says hello, so each
connection's Interpreter gets a :class:`SlottedComputer`: ``prestart`` does nothing, and the
first block of a language takes one of the server's :class:`KernelSlots` before its kernel
starts. When none is free, the client is told it is ``queued`` and the block waits, for a
bounded time, until another connection closes; a stop ends the wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lmc.computer.chunks import active_line_chunk, console_start, output_chunk
from lmc.computer.languages import resolve_language
from lmc.messages import Chunk

__all__ = ["KernelSlots", "SlottedComputer"]


class KernelSlots:
    """A counting semaphore whose waits time out and can be abandoned from another thread."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("at least one kernel must be allowed")
        self.limit = limit
        self._used = 0
        self._condition = threading.Condition()

    @property
    def in_use(self) -> int:
        with self._condition:
            return self._used

    def acquire(
        self,
        timeout: float,
        abandoned: threading.Event,
        on_wait: Callable[[], None] | None = None,
    ) -> bool:
        """Take a slot; False when ``timeout`` passed or ``abandoned`` was set first."""
        with self._condition:
            if self._used >= self.limit and on_wait is not None:
                on_wait()
            got = self._condition.wait_for(
                lambda: abandoned.is_set() or self._used < self.limit, timeout
            )
            if not got or abandoned.is_set():
                return False
            self._used += 1
            return True

    def release(self, count: int = 1) -> None:
        with self._condition:
            self._used = max(0, self._used - count)
            self._condition.notify_all()

    def wake(self) -> None:
        """Let waiters look at their ``abandoned`` events again."""
        with self._condition:
            self._condition.notify_all()


class SlottedComputer:
    """A connection's computer: the real one, whose kernels start only when a block of their
    language runs, each holding one of the server's slots until :meth:`close`."""

    def __init__(
        self,
        inner: Any,
        slots: KernelSlots,
        *,
        wait_timeout: float,
        on_queued: Callable[[], None] = lambda: None,
    ) -> None:
        self.inner = inner
        self.slots = slots
        self.wait_timeout = wait_timeout
        self.on_queued = on_queued
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._abandon = threading.Event()
        self._closed = False

    @property
    def kernels(self) -> int:
        """How many slots this connection holds."""
        with self._lock:
            return len(self._held)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def cwd(self) -> Any:
        return getattr(self.inner, "cwd", None)

    def __getattr__(self, name: str) -> Any:  # languages, sandbox, set_sandbox, ...
        return getattr(self.inner, name)

    def prestart(self, languages: Iterable[str], *, connect: bool = True) -> None:
        """Nothing: a kernel starts when code of its language first runs."""

    def start(self, language: str, *, connect: bool = True) -> None:
        """Nothing, as :meth:`prestart`."""

    def run(self, language: str, code: str, timeout: float | None = None) -> Iterator[Chunk]:
        refusal = self._take_slot(language)
        if refusal is not None:
            yield console_start()
            yield output_chunk(refusal)
            yield active_line_chunk(None)
            return
        yield from self.inner.run(language, code, timeout)

    def _take_slot(self, language: str) -> str | None:
        """None when the block may run; else why it may not."""
        resolved = resolve_language(language)
        if resolved is None or resolved.kernel is None:
            return None  # no kernel (html, applescript, an unknown language): run says why
        with self._lock:
            if resolved.name in self._held or self._closed:
                return None
            self._abandon = abandon = threading.Event()
        if not self.slots.acquire(self.wait_timeout, abandon, self.on_queued):
            if abandon.is_set():
                return "Stopped while waiting for a free kernel; nothing ran.\n"
            return (
                f"No kernel was free within {self.wait_timeout:g} s ({self.slots.limit} run "
                "for other conversations on this server); nothing ran. Try again later.\n"
            )
        with self._lock:
            if self._closed:
                self.slots.release()
                return "This connection closed; nothing ran.\n"
            self._held.add(resolved.name)
        return None

    def interrupt(self) -> None:
        """Stop the running code, or the wait for a kernel."""
        self._abandon.set()
        self.slots.wake()
        self.inner.interrupt()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            held = len(self._held)
            self._held.clear()
        self._abandon.set()
        self.slots.wake()
        try:
            self.inner.close()
        finally:
            self.slots.release(held)
