"""Generations take turns on one in-process model: a first-come-first-served gate.

llama.cpp holds one context, so two connections cannot sample from the same model at
once. Each connection wraps the shared backend in a :class:`TurnTakingBackend`: its
``generate`` waits at the :class:`Gate` (telling its client it is queued) and the
generation holds the gate until its last piece, or until the loop closes it. A connection
that stops while it waits leaves the queue at once, without sampling.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from lmc.backends.base import Backend, Generation, Piece, SamplingSettings, StopReason
from lmc.errors import BackendError

__all__ = ["Gate", "GateTicket", "TurnTakingBackend"]


class GateTicket:
    """One place in the queue (a connection's current wait), abandonable from any thread."""

    __slots__ = ("abandoned", "timed_out")

    def __init__(self) -> None:
        self.abandoned = False
        self.timed_out = False


class Gate:
    """A fair lock: holders in arrival order; a waiter can be abandoned from another thread."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._queue: deque[GateTicket] = deque()
        self._holder: GateTicket | None = None

    @property
    def busy(self) -> bool:
        with self._condition:
            return self._holder is not None or bool(self._queue)

    def acquire(
        self,
        ticket: GateTicket,
        on_wait: Callable[[], None] | None = None,
        timeout: float | None = None,
    ) -> bool:
        """Wait for the turn of ``ticket``; False when it was abandoned before it came, or
        ``timeout`` seconds passed (then ``ticket.timed_out`` is set)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            self._queue.append(ticket)
            told = False
            while not ticket.abandoned and (
                self._holder is not None or self._queue[0] is not ticket
            ):
                if not told and on_wait is not None:
                    told = True
                    on_wait()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    ticket.abandoned = ticket.timed_out = True
                    break
                self._condition.wait(left)
            self._queue.remove(ticket)
            if ticket.abandoned:
                self._condition.notify_all()
                return False
            self._holder = ticket
            return True

    def release(self, ticket: GateTicket) -> None:
        with self._condition:
            if self._holder is ticket:
                self._holder = None
                self._condition.notify_all()

    def abandon(self, ticket: GateTicket) -> None:
        """Stop waiting (from another thread); a held turn is left to its generation's end."""
        with self._condition:
            ticket.abandoned = True
            self._condition.notify_all()


class _Cancelled(Generation):
    """What a generation that was stopped while queued yields: nothing."""

    def __init__(self) -> None:
        self.stop_reason = StopReason.CANCELLED

    def __iter__(self) -> Iterator[Piece]:
        return iter(())


class _GatedGeneration(Generation):
    """The inner generation, releasing the gate when it ends or is closed."""

    def __init__(self, inner: Generation, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release = release
        self.prompt_tokens = inner.prompt_tokens

    def __iter__(self) -> Iterator[Piece]:
        return _GatedPieces(iter(self._inner), self._finish)

    def _finish(self) -> None:
        self.stop_reason = self._inner.stop_reason
        self.prompt_tokens_evaluated = self._inner.prompt_tokens_evaluated
        self.completion_tokens = self._inner.completion_tokens
        self._release()


class _GatedPieces(Iterator[Piece]):
    """Pieces whose end, failure or ``close()`` (even before the first piece) frees the gate;
    a plain generator would not run its ``finally`` when closed before it started."""

    def __init__(self, pieces: Iterator[Piece], finish: Callable[[], None]) -> None:
        self._pieces = pieces
        self._finish: Callable[[], None] | None = finish

    def __next__(self) -> Piece:
        try:
            return next(self._pieces)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        finish, self._finish = self._finish, None
        if finish is None:
            return
        try:
            close = getattr(self._pieces, "close", None)
            if close is not None:
                close()
        finally:
            finish()


class TurnTakingBackend(Backend):
    """One connection's view of the shared model; never closes it."""

    def __init__(
        self,
        shared: Backend,
        gate: Gate,
        on_queued: Callable[[], None] | None = None,
        wait_timeout: float | None = None,
    ) -> None:
        self._shared = shared
        self._gate = gate
        #: How long a generation waits for the model before the turn fails (None: no limit).
        self.wait_timeout = wait_timeout
        #: Called (in the turn's thread) when this connection's generation has to wait.
        self.on_queued = on_queued
        self._lock = threading.Lock()
        self._ticket: GateTicket | None = None
        self.context_size = shared.context_size

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        ticket = GateTicket()
        with self._lock:
            self._ticket = ticket
        if (cancel is not None and cancel.is_set()) or not self._gate.acquire(
            ticket, self.on_queued, self.wait_timeout
        ):
            if ticket.timed_out:
                raise BackendError(
                    f"the model stayed busy with other conversations for {self.wait_timeout:g} s",
                    hint="send the message again later",
                )
            return _Cancelled()
        try:
            inner = self._shared.generate(prompt, settings, cancel)
        except BaseException:
            self._gate.release(ticket)
            raise
        return _GatedGeneration(inner, lambda: self._gate.release(ticket))

    def stop_waiting(self) -> None:
        """Leave the queue (from another thread) if this connection is waiting in it."""
        with self._lock:
            ticket = self._ticket
        if ticket is not None:
            self._gate.abandon(ticket)

    def count_tokens(self, text: str) -> int:
        return self._shared.count_tokens(text)

    def token_lengths(self, text: str) -> list[int] | None:
        return self._shared.token_lengths(text)

    def close(self) -> None:
        """The shared model stays open for the other connections."""
