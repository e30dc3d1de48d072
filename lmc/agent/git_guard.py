"""The block hook that keeps the code from setting up git to run programs at the person's
own next ``git`` (see :mod:`lmc.workspace.planted_git`).

What the working directory's repositories run before the session's first block is the
person's own (their hooks, their credential helper) and is never warned about; what appears
or changes after a block is switched off where it is (or, with ``switch_off`` False, only
said), and the person and the model are told. Checkpoints use it around each block; with
checkpoints off, :class:`GitGuardHooks` is the loop's block hook instead, so it runs anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from lmc.messages import Message
from lmc.messages.sanitize import name_for_terminal

__all__ = ["GitGuard", "GitGuardHooks"]


class GitGuard:
    """What the code set up for git to run, found after each block."""

    def __init__(self, workdir: Callable[[], Path]) -> None:
        self._workdir = workdir
        #: Switch off what is found (False: only the warning; the tests show the attempt
        #: working without it).
        self.switch_off = True
        self._known: dict[Path, set[str]] = {}  # what was there before the first block
        self._warning: str | None = None

    def before(self) -> None:
        """Before a block: the first time in a folder, what is there is the person's own."""
        from lmc.workspace.planted_git import find_risks

        workdir = self._workdir().resolve()
        if workdir not in self._known:
            with contextlib.suppress(OSError):  # a folder gone: nothing of the person's there
                self._known[workdir] = {risk.key for risk in find_risks(workdir)}

    def after(self) -> None:
        """After a block: what is new is switched off; the warning kept for :meth:`warning`."""
        from lmc.workspace.planted_git import find_risks, risks_note, switch_off

        workdir = self._workdir().resolve()
        known = self._known.get(workdir)
        if known is None:
            return
        try:
            new = [risk for risk in find_risks(workdir) if risk.key not in known]
        except OSError as exc:  # said, never the end of the turn
            said = name_for_terminal(str(exc))
            self._warning = f"lmc could not check the repositories the code may have made: {said}"
            return
        if not new:
            return
        problems = switch_off(workdir, new) if self.switch_off else []
        known.update(risk.key for risk in new)  # said once
        self._warning = risks_note(new, problems, switched=self.switch_off)

    def warning(self) -> str | None:
        """The last block's warning (once)."""
        warning, self._warning = self._warning, None
        return warning


class GitGuardHooks:
    """The loop's block hook when checkpoints are off: only the guard."""

    def __init__(self, workdir: Callable[[], Path]) -> None:
        self.git = GitGuard(workdir)

    def before_block(self) -> str | None:
        self.git.before()
        return None

    def after_block(self) -> Message | None:
        self.git.after()
        return None

    def after_note(self) -> str | None:
        return None

    def after_warning(self) -> str | None:
        return self.git.warning()
