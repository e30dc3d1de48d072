"""lmc's shell kernel: a Jupyter kernel around one persistent bash (see bash_session.py).

Messages for one execute request, all on IOPub with the request as parent:

* ``stream`` (stdout/stderr) as the block writes, undecodable bytes replaced by U+FFFD;
* ``lmc_active_line`` with content ``{"line": n}`` before line ``n`` runs, and
  ``{"line": null}`` once the block is over;
* ``error`` when the block ends with a non-zero status: ename ``ExitStatus``, evalue and
  traceback ``exit status N``; ename ``KeyboardInterrupt`` when an interrupt stopped it;
  ename ``ShellExited`` when the shell itself ended (a new one starts for the next block).

SIGINT (``interrupt_mode: signal``) stops the running block; the shell and its state stay.

``lmc_stdin_request`` (control channel, while a block runs), content ``{"action": "keep" |
"write" | "eof", "text": str}``: the block became a job, so its stdin stays open; write to it;
close it. The reply's content: ``status`` ``ok``, ``done`` (bool) and ``text`` in words.

Launched as ``python3 lmc_shell_kernel.py -f CONNECTION_FILE`` (see kernel.json).
"""

from __future__ import annotations

import os
import sys

# kernels/: the shared lmc_wrapper
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

from bash_session import BashSession, Finished
from lmc_wrapper.base import main
from lmc_wrapper.kernel import WrapperKernel, exit_description
from lmc_wrapper.wire import Message
from shell_state import ShellState

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ShellKernel"]


class ShellKernel(WrapperKernel):
    implementation = "lmc_shell"
    implementation_version = "0.1.0"
    banner = "lmc shell kernel: one persistent bash"
    language_info = {  # noqa: RUF012 - replaced, never mutated
        "name": "bash",
        "mimetype": "text/x-sh",
        "file_extension": ".sh",
        "codemirror_mode": "shell",
        "pygments_lexer": "bash",
    }

    def __init__(self, connection_file: str) -> None:
        super().__init__(connection_file)
        env = dict(os.environ)
        self._state, restore = ShellState.from_environment(env)
        self._start_env = dict(env)
        if restore:
            env = self._restored_environment()
        self._bash = self._wrapped = BashSession(
            env,
            dump_state=self._state is not None,
            home=os.path.dirname(os.path.abspath(connection_file)),
        )
        self._bash.start()
        self._handlers["lmc_stdin_request"] = self._stdin_request

    def _stdin_request(self, message: Message) -> dict[str, Any]:
        """lmc's request about the running block's stdin (on the control thread, while the
        block runs): ``{"action": "keep" | "write" | "eof", "text": str}``."""
        action = str(message.content.get("action", ""))
        text = str(message.content.get("text", ""))
        if action not in ("keep", "write", "eof"):
            return {"status": "error", "done": False, "text": f"unknown action {action!r}"}
        done, said = self._bash.input_request(action, text)
        return {"status": "ok", "done": done, "text": said}

    def _restored_environment(self) -> dict[str, str]:
        """The start environment with the saved state applied (and its directory entered)."""
        env = dict(self._start_env)
        if self._state is not None:
            cwd = self._state.restore(env)
            if cwd is not None:
                os.chdir(cwd)
        return env

    def _execute(self, code: str, silent: bool) -> dict[str, Any]:
        finished = Finished(0, interrupted=False, exited=False)
        for event in self._relay(code, silent):
            if isinstance(event, Finished):
                finished = event
        if finished.exited and not self.stopping:  # not when a shutdown request ended it
            if self._state is not None:  # the new shell starts where the last block left
                self._bash.use_environment(self._restored_environment())
            self._bash.restart()
        elif self._state is not None and self._bash.state_dump is not None:
            self._state.save(self._bash.state_dump)
        error = _error_content(finished)
        if error is None:
            return self._ok()
        return self._fail(**error)


def _error_content(finished: Finished) -> dict[str, Any] | None:
    """The ``error`` message content for how a block ended, or None when it succeeded."""
    status = finished.status
    if finished.exited:
        text = f"the shell {exit_description(status)}; the next run starts a new shell"
        return {"ename": "ShellExited", "evalue": text, "traceback": [text]}
    if finished.interrupted:
        return {"ename": "KeyboardInterrupt", "evalue": "interrupted", "traceback": ["interrupted"]}
    if status == 0:
        return None
    text = f"exit status {status}"
    return {"ename": "ExitStatus", "evalue": text, "traceback": [text]}


if __name__ == "__main__":
    main(ShellKernel, sys.argv)
