"""Whether a job takes input, and how: the stdin of a block handed back as a job.

lmc's shell kernel gives each block a stdin of its own that it holds (a FIFO: see
``kernels/lmc_shell/block_input.py``): while the block is in the foreground a program that
reads it gets end-of-input at once (and the model a hint), and once lmc makes the block a job
(``keep``) it stays open, for the model to write a line to or close. Other kernels run the
code in their own process (python, node, R): their jobs take no input, and the model is told
so in one line.
"""

from __future__ import annotations

from typing import Protocol

from lmc.computer.jobs import GiveInput

__all__ = ["job_input"]


class _AsksInput(Protocol):
    def ask_input(self, action: str, text: str = "") -> tuple[bool, str]: ...


def job_input(language: str, session: object, *, fresh: bool) -> tuple[GiveInput | None, str]:
    """For a block of ``language`` that ``session`` runs, now a job: what writes to its stdin
    (None when nothing can), and otherwise why not, in words. ``fresh``: the job keeps the
    kernel (lmc's own shell kernel, not one of a gateway)."""
    if language != "shell":
        return None, (
            f"the {language} kernel runs the code in its own process, whose input lmc "
            "cannot reach (only shell jobs take input)"
        )
    ask = getattr(session, "ask_input", None)
    if not fresh or ask is None:
        return None, "a shell job on a kernel gateway takes no input"
    kernel: _AsksInput = session  # type: ignore[assignment]
    kept, said = kernel.ask_input("keep")
    if not kept:
        return None, said

    def give(text: str | None) -> tuple[bool, str]:
        if text is None:
            return kernel.ask_input("eof")
        return kernel.ask_input("write", text)

    return give, ""
