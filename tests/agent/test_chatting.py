"""Which kernels a turn starts ahead of need: the shell's always, the python kernel only once
the conversation ran python (ipykernel is ~37 MB and a few tenths of a second of CPU beside
lmc's own start, half of lmc's memory on a turn that runs only shell); a python block still
runs in a conversation that never prestarted it."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from support.agent_testing import Replayed

from lmc.agent import Interpreter
from lmc.agent.chatting import PRESTART, prestart_languages
from lmc.messages import Message
from lmc.messages.types import CodeChunk, CodeFormat


def _code(language: CodeFormat, source: str) -> Message:
    code: CodeChunk = {"role": "assistant", "type": "code", "format": language, "content": source}
    return code


def test_the_shell_first_then_what_the_conversation_ran() -> None:
    assert prestart_languages([]) == list(PRESTART) == ["shell"]
    said: Message = {"role": "user", "type": "message", "content": "hi"}
    ran = [said, _code("python", "1"), _code("shell", "ls"), _code("python", "2")]
    assert prestart_languages(ran) == ["shell", "python"]


@pytest.fixture
def make(replayed: Replayed) -> Replayed:
    return partial(replayed, sandbox="off")


def _started(interpreter: Interpreter) -> set[str]:
    computer: Any = interpreter.computer
    return set(computer._sessions)


def test_a_new_conversation_prestarts_only_the_shell(make: Any) -> None:
    interpreter = make()
    interpreter.prestart()
    assert _started(interpreter) == {"shell"}


def test_python_starts_with_its_first_block_and_is_prestarted_from_then_on(make: Any) -> None:
    interpreter = make(
        "<|channel|>analysis to=python code<|message|>print(6 * 7)<|call|>",
        "<|channel|>final<|message|>done<|return|>",
    )
    interpreter.prestart()
    assert _started(interpreter) == {"shell"}
    chunks = list(interpreter.chat("compute", display=False, stream=True))
    outputs = [c for c in chunks if c.get("role") == "computer" and c.get("format") == "output"]
    shown = "".join(str(c.get("content") or "") for c in outputs)
    assert "42" in shown
    assert _started(interpreter) == {"shell", "python"}
    resumed = make()
    resumed.messages = interpreter.messages  # the same conversation, a new process's view
    resumed.prestart()
    assert _started(resumed) == {"shell", "python"}
