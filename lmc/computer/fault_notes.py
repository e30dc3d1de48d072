"""What the model is told when a run's kernel timed out, died or would not stop."""

from __future__ import annotations

from lmc.computer.kernel import InterruptIgnored, KernelDied, TimedOut

__all__ = ["fault_note"]


def fault_note(
    fault: TimedOut | KernelDied | InterruptIgnored, language: str, *, closed: bool, lost: str
) -> str:
    """The line for ``fault``; ``lost`` says what a fresh kernel keeps of the old one's state
    (:func:`lmc.computer.state.lost_words`), ``closed`` that no fresh one comes."""
    if isinstance(fault, TimedOut):
        return f"\nTimed out after {fault.seconds:g} s; interrupting the code.\n"
    if closed:
        return f"\nThe {language} kernel was shut down: the computer was closed.\n"
    if isinstance(fault, KernelDied):
        return (
            f"\nThe {language} kernel died: {fault.describe()}. A fresh one is "
            f"starting for the next run; {lost}.\n"
        )
    return (
        f"\nThe code did not stop within {fault.seconds:g} s of the interrupt, so the "
        f"{language} kernel was restarted; {lost}.\n"
    )
