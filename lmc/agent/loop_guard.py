"""The loop guard: a model that runs the same code again and again with the same result.

gpt-oss, given an empty or failing result, sometimes sends the very same call again, and
again, until the step limit. Within one turn the guard counts each code block by its language,
its code with whitespace normalised and the output it got. The third such run tells the model
(in the result it reads) that it is repeating itself; the fourth ends the turn with one line
(``lmc run`` then exits with a status of its own). A block whose output changes (polling a
file that grows, a job's progress) never counts as a repeat.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LOOP_STOP", "REPEATS_TO_STOP", "REPEATS_TO_WARN", "LoopGuard", "loop_stop_note"]

#: The run of the same block, with the same output, that makes the model be told.
REPEATS_TO_WARN: Final = 3
#: ... and the one that ends the turn.
REPEATS_TO_STOP: Final = 4
#: How the note that ends a turn for a loop begins (``lmc run`` picks its exit status by it).
LOOP_STOP: Final = "Stopped: the model is repeating itself"


def loop_stop_note(language: str, times: int) -> str:
    return (
        f"{LOOP_STOP}: it ran the same {language} code {times} times in this turn with the "
        "same output."
    )


def repeat_warning(language: str, times: int) -> str:
    return (
        f"\nlmc: this exact {language} code has now run {times} times in this turn with the "
        "same output; running it again gives the same result. Try something different, or "
        "answer with what you have.\n"
    )


class LoopGuard:
    """Counts a turn's code blocks by (language, normalised code, output)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], int] = {}
        #: Set when a block was repeated :data:`REPEATS_TO_STOP` times: the turn ends.
        self.stop_note: str | None = None

    def reset(self) -> None:
        """A new turn: nothing seen."""
        self._seen.clear()
        self.stop_note = None

    def observe(self, language: str, code: str, output: str) -> str | None:
        """Count one run; the warning to add to what the model reads, or None."""
        key = (language, " ".join(code.split()), output.strip())
        times = self._seen.get(key, 0) + 1
        self._seen[key] = times
        if times >= REPEATS_TO_STOP:
            self.stop_note = loop_stop_note(language, times)
            return None
        if times == REPEATS_TO_WARN:
            return repeat_warning(language, times)
        return None
