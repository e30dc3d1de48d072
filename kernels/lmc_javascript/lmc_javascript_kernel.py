"""lmc's JavaScript kernel: a Jupyter kernel around one persistent node (see node_session.py).

Messages for one execute request, all on IOPub with the request as parent:

* ``stream`` (stdout/stderr) as the code writes, undecodable bytes replaced by U+FFFD;
* ``lmc_active_line`` with content ``{"line": n}`` before each top-level statement (its first
  line) runs, and ``{"line": null}`` once the run is over;
* ``execute_result`` (``text/plain``, node's ``util.inspect``) for the last statement's value
  when it is not ``undefined``;
* ``error`` when the code throws: ename the error's name, traceback its stack (frames of the
  cell only, real line numbers, file name ``cell``); ename ``KeyboardInterrupt`` after an
  interrupt; ename ``NodeExited`` when node itself ended (a new one starts next run) and
  ``NodeNotFound`` when there is no node to run.

SIGINT (``interrupt_mode: signal``) stops the running code; node and its globals stay.

Launched as ``python3 lmc_javascript_kernel.py -f CONNECTION_FILE`` (see kernel.json).
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from ipykernel.kernelbase import Kernel
from node_session import ActiveLine, Failed, Finished, NodeSession, NodeStartError, Output, Result

__all__ = ["JavaScriptKernel"]


class JavaScriptKernel(Kernel):
    implementation = "lmc_javascript"
    implementation_version = "0.1.0"
    banner = "lmc JavaScript kernel: one persistent node"
    language_info = {  # noqa: RUF012 - class attribute, as ipykernel expects
        "name": "javascript",
        "mimetype": "application/javascript",
        "file_extension": ".js",
        "codemirror_mode": "javascript",
        "pygments_lexer": "javascript",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        self._node = NodeSession()
        self._start_problem: str | None = None
        self._start()

    def _start(self) -> None:
        try:
            self._node.restart()
        except NodeStartError as exc:
            self._start_problem = str(exc)
        else:
            self._start_problem = None
            self.language_info = {**self.language_info, "version": self._node.version}

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
        ok = {
            "status": "ok",
            "execution_count": self.execution_count,
            "payload": [],
            "user_expressions": {},
        }
        if not code.strip():
            return ok
        if self._start_problem is not None:
            self._start()
        if self._start_problem is not None:
            return self._fail("NodeNotFound", self._start_problem, [self._start_problem])
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        previous_wakeup = signal.set_wakeup_fd(self._node.wakeup_fd, warn_on_full_buffer=False)
        failure: Failed | None = None
        finished = Finished()
        try:
            for event in self._node.run(code):
                if isinstance(event, Output):
                    if not silent:
                        self._send("stream", {"name": event.name, "text": event.text})
                elif isinstance(event, ActiveLine):
                    self._send("lmc_active_line", {"line": event.line})
                elif isinstance(event, Result):
                    if not silent:
                        self._send(
                            "execute_result",
                            {
                                "execution_count": self.execution_count,
                                "data": {"text/plain": event.text},
                                "metadata": {},
                            },
                        )
                elif isinstance(event, Failed):
                    failure = event
                else:
                    finished = event
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            signal.signal(signal.SIGINT, previous)
        self._send("lmc_active_line", {"line": None})
        if finished.exited:
            status = finished.status
            how = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
            text = f"node {how}; the next run starts a new node"
            self._start()
            return self._fail("NodeExited", text, [text])
        if failure is not None:
            return self._fail(failure.ename, failure.evalue, failure.traceback)
        return ok

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        self._node.close()
        return {"status": "ok", "restart": restart}

    def _fail(self, ename: str, evalue: str, traceback: list[str]) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": traceback}
        self._send("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self._node.interrupt()

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


if __name__ == "__main__":
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(kernel_class=JavaScriptKernel)
