"""SIGTERM and SIGHUP (a closed terminal window, ``kill``) end lmc the way Ctrl-C ends a turn.

Their default action kills the process on the spot: the kernels' children (a ``sleep``, a
busy loop) are reparented to init and keep running, and the kernels' connection files (with
their HMAC keys) stay in /tmp. Instead, the first of them raises :class:`Terminated` (a
``KeyboardInterrupt``) in the main thread, so the path Ctrl-C takes runs: the turn stops, a
running kernel is interrupted, the conversation is recorded as far as it went. The command
then closes the Interpreter, which ends the kernels, and exits with 128 + the signal number.

While lmc closes (:func:`closing`) a signal is only noted: an exception raised in the middle
of shutting the kernels down would leave them running.

At the chat's prompt, prompt_toolkit runs an asyncio loop, and an exception raised from a
handler at an arbitrary point of that loop can wedge asyncio's own shutdown (lmc was seen
hanging after its terminal closed). There :func:`end_prompt_on_signals` routes the signals
through the loop instead: the prompt ends with :class:`Terminated`, raised from the prompt
call like any other exception of the application.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = [
    "Terminated",
    "closing",
    "end_prompt_on_signals",
    "exit_status",
    "restore_handlers",
    "terminate_like_interrupt",
]

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: stop like Ctrl-C, then leave."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _State:
    received: int | None = None
    closing: int = 0
    active: bool = False


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _state.received is not None:
        return  # already leaving
    _state.received = signum
    if not _state.closing:
        raise Terminated(signum)


@contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """Within this block, SIGTERM and SIGHUP raise :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.received = None
    previous = {signum: signal.signal(signum, _handler) for signum in _SIGNALS}
    _state.active = True
    try:
        yield
    finally:
        _state.active = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def end_prompt_on_signals(app: Any) -> None:
    """Called in prompt_toolkit's running loop (``pre_run``): SIGTERM and SIGHUP end the
    prompt ``app`` with :class:`Terminated`, from the loop rather than mid-callback."""
    if not _state.active:
        return
    import asyncio  # here, not at the top: ``lmc run`` has no asyncio loop (15 ms of start-up)

    loop = asyncio.get_running_loop()
    for signum in _SIGNALS:
        loop.add_signal_handler(signum, _end_prompt, app, signum)


def _end_prompt(app: Any, signum: int) -> None:
    if _state.received is None:
        _state.received = signum
    if not app.is_done:
        app.exit(exception=Terminated(signum))


def restore_handlers() -> None:
    """After a prompt: its loop set the signals back to their defaults when it closed."""
    if _state.active and threading.current_thread() is threading.main_thread():
        for signum in _SIGNALS:
            signal.signal(signum, _handler)


@contextmanager
def closing() -> Iterator[None]:
    """Shutting down: a signal now is noted (see :func:`exit_status`), not raised."""
    _state.closing += 1
    try:
        yield
    finally:
        _state.closing -= 1


def exit_status(status: int) -> int:
    """``status``, or 128 + the signal number when a terminating signal arrived."""
    return status if _state.received is None else 128 + _state.received
