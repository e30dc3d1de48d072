"""A scripted model for long tasks against servers with a small context (served_servers.py).

The person asks for TASK's 20 steps; the model makes one python call a step, each printing
``step N done`` and a line of padding (so that the conversation outgrows 4,096 tokens in a few
steps), and once step 20 is done says so. It works only from what the server let it see: a
prompt from which the request was cut answers "I have lost the task", as gpt-oss does when
Ollama drops the front of a conversation. Asked by lmc's compaction to summarise, it keeps the
request and the last step done.

Only these words are the tests' own; the servers around it send the real servers' shapes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DONE",
    "LOST",
    "REQUEST",
    "STEPS",
    "TASK",
    "Answer",
    "answer_for",
    "server_tokens",
]

TASK: Final = "ZEBRA-42"
STEPS: Final = 20
REQUEST: Final = f"Run the {STEPS} steps of task {TASK}: one python call a step."
DONE: Final = f"All {STEPS} steps of {TASK} are done."
LOST: Final = "I have lost the task: I do not know what you asked for."
PADDING: Final = 180  # repetitions of "pad " a step prints: about 180 tokens
_STEP: Final = re.compile(r"step (\d+) done")
_SUMMARY_ASK: Final = "Summarise this conversation for the assistant to continue from"


@dataclass(frozen=True, slots=True)
class Answer:
    """A python call (``code``) or a final answer (``text``), and the reasoning before it."""

    reasoning: str
    code: str = ""
    text: str = ""


def server_tokens(text: str) -> int:
    """How the stand-in servers count tokens: a little more than lmc's 4 bytes a token
    (their tokenizer is not lmc's; the server's count corrects lmc's estimate)."""
    return math.ceil(len(text.encode("utf-8")) / 3.8)


def _last_step(seen: str) -> int:
    return max((int(n) for n in _STEP.findall(seen)), default=0)


def answer_for(seen: str) -> Answer:
    """What the model answers to a conversation of which the server kept ``seen``."""
    if _SUMMARY_ASK in seen:
        if TASK not in seen:
            return Answer("Nothing to keep.", text="The user asked for nothing I can see.")
        step = _last_step(seen)
        return Answer(
            "Keep the request and the progress.",
            text=f"The user asked: {REQUEST} Progress: step {step} done.",
        )
    if TASK not in seen:
        return Answer("The request is not in what I see.", text=LOST)
    step = _last_step(seen)
    if step >= STEPS:
        return Answer("Every step ran.", text=DONE)
    following = step + 1
    code = f'print("step", {following}, "done")\nprint("pad " * {PADDING})'
    return Answer(f"Step {following} next.", code=code)
