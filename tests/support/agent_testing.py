"""Helpers the agent tests import (a module of its own: every test directory has a
``conftest``, so ``from conftest import ...`` picks whichever was imported first)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lmc.agent import Interpreter
from lmc.backends.base import Backend, Generation, SamplingSettings


def python_call(code: str) -> str:
    """What gpt-oss writes to run ``code`` with the python tool."""
    return f"<|channel|>analysis to=python code<|message|>{code}<|call|>"


def function_call(name: str, code: str) -> str:
    """What gpt-oss writes to run ``code`` with lmc's function ``name`` (shell, javascript)."""
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
    )


def shell_call(code: str) -> str:
    return function_call("shell", code)


class RecordingBackend(Backend):
    """The real backend, remembering each prompt and generation so tests can read counters."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.context_size = inner.context_size
        self.prompts: list[str] = []
        self.generations: list[Generation] = []

    def generate(
        self, prompt: str, settings: SamplingSettings | None = None, cancel: Any = None
    ) -> Generation:
        generation = self.inner.generate(prompt, settings, cancel)
        self.prompts.append(prompt)
        self.generations.append(generation)
        return generation

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def token_lengths(self, text: str) -> list[int] | None:
        return self.inner.token_lengths(text)

    def close(self) -> None:
        self.inner.close()


MakeInterpreter = Callable[..., tuple[Interpreter, RecordingBackend]]
#: ``build(*completions, **settings)`` of the ``replayed`` fixture (tests/agent/conftest.py).
Replayed = Callable[..., Interpreter]
