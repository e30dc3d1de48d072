"""One ACP session: a stored conversation, its Interpreter, its turns and its questions.

A prompt runs the Interpreter's turn in the thread that handles the request and streams
each chunk's updates at once. Before a block runs (without ``-y``) the person is asked with
``session/request_permission`` and four options; ``allow_always`` and ``reject_always``
become rules for the rest of the session (a language, or a tool), like ``a`` at the terminal.
``session/cancel`` stops the model or interrupts the running block (the Interpreter's
cancel), answers a pending question "cancelled", and the prompt ends ``cancelled``; what ran
before is stored, and the kernels stay for the next prompt.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from lmc.acp.diffs import diff_maker
from lmc.acp.updates import Updates, message_chunks
from lmc.acp.wire import INTERNAL_ERROR, INVALID_REQUEST, Pending, RpcError, Wire
from lmc.agent.approvals import Answer, Approvals, Declined, Rule, kind_rule
from lmc.errors import LmcError
from lmc.messages import Block, Chunk, Message

__all__ = ["Session", "permission_options"]

log = logging.getLogger("lmc.acp")

_ALLOW: Final = {"allow_once", "allow_always"}
#: A cancel is repeated this often, this many times at most, until the turn has ended.
_CANCEL_EVERY: Final = 0.5
_CANCEL_TRIES: Final = 120


def permission_options(block: Block) -> list[dict[str, str]]:
    """The four answers, named for this block's language (or tool)."""
    what = block["format"]
    run = "Run" if block["type"] == "code" else "Allow"
    return [
        {"optionId": "allow_once", "name": f"{run} once", "kind": "allow_once"},
        {
            "optionId": "allow_always",
            "name": f"Always {run.lower()} {what}",
            "kind": "allow_always",
        },
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject_always", "name": f"Always reject {what}", "kind": "reject_always"},
    ]


def _chosen(pending: Pending) -> str:
    """The option the client chose; "cancelled" when it cancelled, failed or said nonsense."""
    result = pending.result if pending.error is None else None
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if isinstance(outcome, dict) and outcome.get("outcome") == "selected":
        option = outcome.get("optionId")
        if isinstance(option, str):
            return option
    return "cancelled"


def _starts_work(chunk: Chunk) -> bool:
    return chunk["role"] == "assistant" or (chunk["type"] == "console" and "start" in chunk)


class Session:
    """A session the client opened (session/new) or loaded (session/load)."""

    def __init__(
        self,
        session_id: str,
        wire: Wire,
        make_interpreter: Callable[[], Any],
        *,
        auto_run: bool,
        approvals: Approvals | None = None,
        stop_waiting: Callable[[], None] = lambda: None,
    ) -> None:
        self.id = session_id
        self._wire = wire
        self._make = make_interpreter
        self.interpreter: Any = None
        self._auto_run = auto_run
        self._stop_waiting = stop_waiting
        self._approvals = approvals or Approvals()
        self._refusals: list[Rule] = []
        self._busy = threading.Lock()
        self._turn_lock = threading.Lock()  # a turn's start, and each cancel of it
        self._turn_number = 0
        self._making = threading.Lock()
        self._cancelled = threading.Event()
        self._pending: Pending | None = None
        self._updates: Updates | None = None
        self._ids = itertools.count(1)  # tool call ids, unique in the session

    def _notify(self, updates: Iterable[dict[str, Any]]) -> None:
        for update in updates:
            self._wire.notify("session/update", {"sessionId": self.id, "update": update})

    def replay(self, messages: Iterable[Message]) -> None:
        """Send a stored conversation as the updates it streamed (the person's words too)."""
        updates = Updates(None, self._ids)
        for message in messages:
            for chunk in message_chunks(message):
                self._notify(updates.feed(chunk))
        self._notify(updates.finish())

    # -- a prompt ------------------------------------------------------------------------------

    def interpreter_now(self) -> Any:
        with self._making:  # the first prompt, or the start of the session's MCP servers
            if self.interpreter is None:
                self.interpreter = self._make()
            return self.interpreter

    def prompt(self, text: str) -> str:
        """Run one turn; its stop reason. RpcError when it cannot run at all."""
        with self._turn_lock:
            if not self._busy.acquire(blocking=False):
                raise RpcError(INVALID_REQUEST, "a prompt is already running in this session")
            self._turn_number += 1
            self._cancelled.clear()
        try:
            return self._turn(text)
        except LmcError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            raise RpcError(INTERNAL_ERROR, f"{exc}{hint}") from exc
        finally:
            self._updates = None
            self._busy.release()

    def _turn(self, text: str) -> str:
        interpreter = self.interpreter_now()
        first = not interpreter.messages
        updates = self._updates = Updates(diff_maker(lambda: interpreter.checkpointer), self._ids)
        stream = interpreter.chat(text, stream=True, display=False, confirm=self._confirm)
        try:
            for chunk in stream:
                if self._cancelled.is_set() and _starts_work(chunk):
                    interpreter.cancel()  # the cancel came before the turn began: again
                self._notify(updates.feed(chunk))
        finally:
            stream.close()
        cancelled = self._cancelled.is_set()
        self._notify(updates.finish(cancelled))
        if first and interpreter.conversation_id is not None:
            interpreter.store.set_title(interpreter.conversation_id, text)
        return updates.stop_reason(cancelled)

    def cancel(self) -> None:
        """session/cancel: stop the turn (from the thread that reads the client)."""
        self._cancelled.set()
        updates = self._updates
        if updates is not None:
            updates.cut_short()
        pending = self._pending
        if pending is not None:
            pending.settle({"outcome": {"outcome": "cancelled"}}, None)
        with self._turn_lock:
            turn = self._turn_number
        threading.Thread(target=self._keep_cancelling, args=(turn,), daemon=True).start()

    def _keep_cancelling(self, turn: int) -> None:
        """Cancel the turn until it ends: an interrupt that reaches a kernel just before its
        code starts is lost, so it is sent again (never to a later turn)."""
        for _ in range(_CANCEL_TRIES):
            with self._turn_lock:
                if self._turn_number != turn or not self._busy.locked():
                    return
                if self.interpreter is not None:
                    self.interpreter.cancel()
                    self._stop_waiting()
            time.sleep(_CANCEL_EVERY)

    @property
    def busy(self) -> bool:
        return self._busy.locked()

    # -- permission ------------------------------------------------------------------------------

    def _refuse(self, reason: str = "") -> Answer:
        if self._updates is not None:
            self._updates.declined()
        return Declined(reason)

    def _confirm(self, block: Block) -> Answer:
        """Called in the turn's thread before each block runs: ask the client."""
        if self._cancelled.is_set():
            return self._refuse()
        if self._auto_run or self._approvals.allows(block) is not None:
            return True
        if any(rule.matches(block) for rule in self._refusals):
            return self._refuse(f"The user rejects every {block['format']} call this session.")
        current = self._updates.current() if self._updates is not None else None
        if current is None:
            return self._refuse()
        params = {"sessionId": self.id, "toolCall": current, "options": permission_options(block)}
        pending = self._pending = self._wire.request("session/request_permission", params)
        if self._cancelled.is_set():  # the cancel came while the question was being sent
            pending.settle({"outcome": {"outcome": "cancelled"}}, None)
        pending.wait()
        self._pending = None
        choice = _chosen(pending)
        if choice == "allow_always":
            self._approvals.add(kind_rule(block))
        elif choice == "reject_always":
            self._refusals.append(kind_rule(block))
        return True if choice in _ALLOW else self._refuse()

    def close(self) -> None:
        self.cancel()
        if self.interpreter is not None:
            try:
                self.interpreter.close()
            except Exception:  # one session failing to close must not keep the others open
                log.exception("closing session %s", self.id)
