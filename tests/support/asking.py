"""A person's answers, scripted: what a confirmation test types."""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["scripted_asker"]


def scripted_asker(*answers: str) -> tuple[list[str], Callable[[str], str]]:
    """The questions asked (filled as they come) and an ``ask`` that answers them in turn;
    past the last answer it raises EOFError, as a closed terminal does."""
    asked: list[str] = []
    replies: Iterator[str] = iter(answers)

    def ask(question: str) -> str:
        asked.append(question)
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    return asked, ask
