"""The terminal's question after a block the sandbox blocked: run it once more with what it
lacked? Asked only of a person at the terminal, and never when code runs without asking
(``-y``, an "a" answer, ``%auto_run on``): then nothing runs again. Empty input, "n" or the
end of input mean no, so a stray Enter keeps the sandbox strict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from lmc.messages import Block
from lmc.terminal.confirm import Asker, Confirmer

__all__ = ["QUESTIONS", "RerunQuestion", "offer_reruns"]

QUESTIONS: Final = {
    "network": "Run this block again with network? [y/N]: ",
    "unsandboxed": "Run this block again without the sandbox? [y/N]: ",
}


class _Screen(Protocol):
    def pause(self) -> None: ...

    def waiting(self, text: str = ...) -> None: ...


class RerunQuestion:
    """The ``offer_rerun`` callback of :class:`lmc.Interpreter` for the terminal."""

    def __init__(
        self, *, ask: Asker, attended: Callable[[], bool], screen: _Screen | None = None
    ) -> None:
        self.ask = ask
        self.attended = attended
        self.screen = screen

    def __call__(self, block: Block, lacked: str) -> bool:
        question = QUESTIONS.get(lacked)
        if question is None or not self.attended():
            return False
        if self.screen is not None:
            self.screen.pause()
        try:
            reply = self.ask(question).strip().lower()
        except EOFError:
            reply = ""
        yes = reply in ("y", "yes")
        if not yes and self.screen is not None:
            self.screen.waiting()
        return yes


def offer_reruns(interpreter: Any, confirmer: Confirmer, screen: _Screen | None) -> None:
    """Let ``interpreter`` offer re-runs with the confirmer's question on the terminal, when
    it has one to ask on; the offer is skipped while the confirmer runs code unasked."""
    if confirmer.ask is None or not hasattr(interpreter, "offer_rerun"):
        return
    interpreter.offer_rerun = RerunQuestion(
        ask=confirmer.ask, attended=lambda: not confirmer.auto_run, screen=screen
    )
