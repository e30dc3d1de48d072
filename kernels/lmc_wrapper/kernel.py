"""The side both wrapper kernels share: a :class:`PipeSession`'s events as Jupyter messages.

Every message goes on IOPub with the execute request as parent: ``stream`` for
:class:`Output` (not when ``silent``), ``lmc_active_line`` for :class:`ActiveLine` and
``{"line": null}`` once the run is over, ``error`` plus an error ``execute_reply`` for a
failure. SIGINT (``interrupt_mode: signal``) is forwarded to the session while code runs.
The protocol itself is :mod:`lmc_wrapper.base` (the standard library only, no ipykernel).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from lmc_wrapper.base import KernelBase
from lmc_wrapper.session import ActiveLine, Output, PipeSession

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WrapperKernel", "exit_description", "forwarding_sigint"]


def exit_description(status: int) -> str:
    """How a child ended, from its ``wait()`` status (negative: the signal that killed it)."""
    return f"killed by signal {-status}" if status < 0 else f"exited with status {status}"


@contextlib.contextmanager
def forwarding_sigint(session: PipeSession) -> Iterator[None]:
    """While code runs, SIGINT interrupts ``session`` and wakes its ``select()``."""
    previous = signal.signal(signal.SIGINT, lambda signum, frame: session.interrupt())
    previous_wakeup = signal.set_wakeup_fd(session.wakeup_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        signal.signal(signal.SIGINT, previous)


class WrapperKernel(KernelBase):
    """A Jupyter kernel relaying one :class:`PipeSession`; a subclass sets ``_wrapped``.

    The subclass implements :meth:`_execute` for non-blank code and may relay events of its
    own kind in :meth:`_relay_more`.
    """

    _wrapped: PipeSession

    def do_execute(self, code: str, silent: bool) -> dict[str, Any]:
        if not code.strip():
            return self._ok()
        return self._execute(code, silent)

    def do_shutdown(self) -> None:
        self._wrapped.close()

    def kill_child(self) -> None:
        wrapped: PipeSession | None = getattr(self, "_wrapped", None)
        process = None if wrapped is None else wrapped._process
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def _execute(self, code: str, silent: bool) -> dict[str, Any]:
        raise NotImplementedError

    def _relay(self, code: str, silent: bool) -> list[object]:
        """Run ``code``, sending output and active lines as they come, then ``{"line": null}``.

        Returns the events neither sent here nor by :meth:`_relay_more`, in order.
        """
        rest: list[object] = []
        with forwarding_sigint(self._wrapped):
            for event in self._wrapped.run(code):
                if isinstance(event, Output):
                    if not silent:
                        self._send("stream", {"name": event.name, "text": event.text})
                elif isinstance(event, ActiveLine):
                    self._send("lmc_active_line", {"line": event.line})
                elif not self._relay_more(event, silent):
                    rest.append(event)
        self._send("lmc_active_line", {"line": None})
        return rest

    def _relay_more(self, event: object, silent: bool) -> bool:
        """Send a kernel-specific event; False leaves it to the caller of :meth:`_relay`."""
        return False

    def _ok(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "execution_count": self.execution_count,
            "payload": [],
            "user_expressions": {},
        }

    def _fail(self, ename: str, evalue: str, traceback: list[str]) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": traceback}
        self._send("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.publish(msg_type, content)
