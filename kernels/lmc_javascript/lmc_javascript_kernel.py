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

import os
import sys

# kernels/: the shared lmc_wrapper
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

from lmc_wrapper.base import main
from lmc_wrapper.kernel import WrapperKernel, exit_description
from node_session import Failed, Finished, NodeSession, NodeStartError, Result

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["JavaScriptKernel"]


class JavaScriptKernel(WrapperKernel):
    implementation = "lmc_javascript"
    implementation_version = "0.1.0"
    banner = "lmc JavaScript kernel: one persistent node"
    language_info = {  # noqa: RUF012 - replaced, never mutated
        "name": "javascript",
        "mimetype": "application/javascript",
        "file_extension": ".js",
        "codemirror_mode": "javascript",
        "pygments_lexer": "javascript",
    }

    def __init__(self, connection_file: str) -> None:
        super().__init__(connection_file)
        self._node = self._wrapped = NodeSession()
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

    def _execute(self, code: str, silent: bool) -> dict[str, Any]:
        if self._start_problem is not None:
            self._start()
        if self._start_problem is not None:
            return self._fail("NodeNotFound", self._start_problem, [self._start_problem])
        failure: Failed | None = None
        finished = Finished()
        for event in self._relay(code, silent):
            if isinstance(event, Failed):
                failure = event
            elif isinstance(event, Finished):
                finished = event
        if finished.exited:
            text = f"node {exit_description(finished.status)}; the next run starts a new node"
            if not self.stopping:  # not when a shutdown request ended it
                self._start()
            return self._fail("NodeExited", text, [text])
        if failure is not None:
            return self._fail(failure.ename, failure.evalue, failure.traceback)
        return self._ok()

    def _relay_more(self, event: object, silent: bool) -> bool:
        if not isinstance(event, Result):
            return False
        if not silent:
            self._send(
                "execute_result",
                {
                    "execution_count": self.execution_count,
                    "data": {"text/plain": event.text},
                    "metadata": {},
                },
            )
        return True


if __name__ == "__main__":
    main(JavaScriptKernel, sys.argv)
