"""The Interpreter's part about the person's files and the context: undo (files and
messages), the last turn's diff, checkpoints, AGENTS.md and compaction on demand.

A mixin of :class:`lmc.agent.interpreter.Interpreter`, kept apart so that each module has one
job; the attributes it uses are the Interpreter's.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from lmc.agent.checkpoints import (
    RewindReport,
    TurnCheckpoint,
    last_turn_patch,
    list_checkpoints,
    plan_rewind,
    rewind,
)
from lmc.errors import LmcError
from lmc.messages import Message, text_of
from lmc.workspace.agents_md import AgentsDoc, read_agents

if TYPE_CHECKING:
    from lmc.agent.loop import ComputerLike, Loop
    from lmc.agent.storage import ConversationStore
    from lmc.backends.base import Backend
    from lmc.computer import Computer

__all__ = ["WorkspaceMixin"]


class WorkspaceMixin:
    """Undo, diff, checkpoints, AGENTS.md and compaction for the Interpreter."""

    _loop: Loop
    _busy: threading.Lock
    _conversation_id: str | None
    _checkpoint_caps: tuple[int, int]
    _computer: Computer | ComputerLike | None  # the Interpreter's (None until one is made)
    agents_md_max_bytes: int
    last_undo: RewindReport | None

    @property
    def store(self) -> ConversationStore:  # the Interpreter's
        raise NotImplementedError

    def _get_backend(self) -> Backend:  # the Interpreter's
        raise NotImplementedError

    def _workdir(self) -> Path:  # the Interpreter's
        raise NotImplementedError

    def undo(self, turns: int = 1, *, force: bool = False) -> list[Message]:
        """Undo the last turn (or ``turns`` turns): the files its code changed go back to
        what they were before it, whatever language changed them, and its messages are
        dropped; returns the dropped messages (:attr:`last_undo` says what was restored).

        Raises :class:`~lmc.errors.WorkspaceError`, undoing nothing, when the files were
        changed by hand since the last turn, unless ``force``. Kernel state is not undone.
        """
        if self._busy.locked():
            raise LmcError("a turn is running: undo after it ends")
        transcript = self._loop.transcript
        if self._conversation_id is None:  # nothing stored, so no checkpoints either
            report = plan_rewind(transcript.messages, turns)
            keep = len(transcript.entries) - report.messages
        else:
            with self._code_stopped():
                report, keep = rewind(
                    self.store,
                    self._conversation_id,
                    turns,
                    force=force,
                    caps=self._checkpoint_caps,
                )
        dropped = [entry.message for entry in transcript.entries[keep:]]
        del transcript.entries[keep:]
        self._loop.dropped_turns = min(
            self._loop.dropped_turns, max(transcript.turn_count() - 1, 0)
        )
        self.last_undo = report
        return dropped

    def _code_stopped(self) -> contextlib.AbstractContextManager[object]:
        """The session's code stopped while undo works on the files (nothing races it):
        the kernels' processes and everything they started get SIGSTOP, then SIGCONT."""
        frozen = getattr(self._computer, "frozen", None)
        return frozen() if callable(frozen) else contextlib.nullcontext()

    def diff(self) -> str | None:
        """The full diff of the last turn that changed files; None when none did."""
        if self._conversation_id is None:
            return None
        return last_turn_patch(self.store, self._conversation_id)

    def checkpoints(self) -> list[TurnCheckpoint]:
        """The turns whose files :meth:`undo` can restore, the latest first."""
        if self._conversation_id is None:
            return []
        return list_checkpoints(self.store, self._conversation_id)

    def agents_md(self) -> AgentsDoc:
        """The AGENTS.md files that brief the model here, and their text."""
        return read_agents(self._workdir(), self.agents_md_max_bytes)

    def compact(self) -> str:
        """Summarise the older messages now (``%compact``); says what was done."""
        compactor = self._loop.compactor
        if compactor is None:
            raise LmcError("compaction is off for this Interpreter")
        if not self._busy.acquire(blocking=False):
            raise LmcError("a turn is running: compact after it ends")
        try:
            backend = self._get_backend()
            reserve = self._loop.settings.sampling.max_tokens or self._loop.settings.answer_reserve
            steps = compactor.fit(backend, backend.context_size, reserve, force=True)
            said: list[str] = []
            try:
                while True:
                    chunk = next(steps)
                    if text_of(chunk):
                        said.append(text_of(chunk))
            except StopIteration as stop:
                done = bool(stop.value)
        finally:
            self._busy.release()
        if not done and not said:
            return "nothing to compact yet: the conversation is too short"
        return "\n".join(said)
