"""lmc's shell kernel: a Jupyter kernel around one persistent bash (see bash_session.py).

Messages for one execute request, all on IOPub with the request as parent:

* ``stream`` (stdout/stderr) as the block writes, undecodable bytes replaced by U+FFFD;
* ``lmc_active_line`` with content ``{"line": n}`` before line ``n`` runs, and
  ``{"line": null}`` once the block is over;
* ``error`` when the block ends with a non-zero status: ename ``ExitStatus``, evalue and
  traceback ``exit status N``; ename ``KeyboardInterrupt`` when an interrupt stopped it;
  ename ``ShellExited`` when the shell itself ended (a new one starts for the next block).

SIGINT (``interrupt_mode: signal``) stops the running block; the shell and its state stay.

Launched as ``python3 lmc_shell_kernel.py -f CONNECTION_FILE`` (see kernel.json).
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from bash_session import ActiveLine, BashSession, Finished, Output
from ipykernel.kernelbase import Kernel

__all__ = ["ShellKernel"]


class ShellKernel(Kernel):
    implementation = "lmc_shell"
    implementation_version = "0.1.0"
    banner = "lmc shell kernel: one persistent bash"
    language_info = {  # noqa: RUF012 - traitlets-style class attribute, as ipykernel expects
        "name": "bash",
        "mimetype": "text/x-sh",
        "file_extension": ".sh",
        "codemirror_mode": "shell",
        "pygments_lexer": "bash",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        self._bash = BashSession()
        self._bash.start()

    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        *,
        cell_meta: dict[str, Any] | None = None,
        cell_id: str | None = None,
    ) -> dict[str, Any]:
        ok = {"status": "ok", "execution_count": self.execution_count, "payload": []}
        ok["user_expressions"] = {}
        if not code.strip():
            return ok
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        previous_wakeup = signal.set_wakeup_fd(self._bash.wakeup_fd, warn_on_full_buffer=False)
        finished = Finished(0, interrupted=False, exited=False)
        try:
            for event in self._bash.run(code):
                if isinstance(event, Output):
                    if not silent:
                        self._send("stream", {"name": event.name, "text": event.text})
                elif isinstance(event, ActiveLine):
                    self._send("lmc_active_line", {"line": event.line})
                else:
                    finished = event
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            signal.signal(signal.SIGINT, previous)
        self._send("lmc_active_line", {"line": None})
        if finished.exited:
            self._bash.restart()
        error = _error_content(finished)
        if error is None:
            return ok
        self._send("error", error)
        return {"status": "error", "execution_count": self.execution_count, **error}

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        self._bash.close()
        return {"status": "ok", "restart": restart}

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self._bash.interrupt()

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        if self.session is None:
            return
        self.session.send(
            self.iopub_socket,
            msg_type,
            content,
            parent=self.get_parent(),  # type: ignore[no-untyped-call]
            ident=self._topic(msg_type),  # type: ignore[no-untyped-call]
        )


def _error_content(finished: Finished) -> dict[str, Any] | None:
    """The ``error`` message content for how a block ended, or None when it succeeded."""
    status = finished.status
    if finished.exited:
        how = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
        text = f"the shell {how}; the next run starts a new shell"
        return {"ename": "ShellExited", "evalue": text, "traceback": [text]}
    if finished.interrupted:
        return {"ename": "KeyboardInterrupt", "evalue": "interrupted", "traceback": ["interrupted"]}
    if status == 0:
        return None
    text = f"exit status {status}"
    return {"ename": "ExitStatus", "evalue": text, "traceback": [text]}


if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=ShellKernel)
