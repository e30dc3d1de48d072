"""Prompt pieces the backend tests share (not in conftest: see support/agent_testing.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmc.backends.llama import LlamaCppBackend

# The ``make_backend`` fixture: completions to replay (and config) in, a backend out.
MakeBackend = Callable[..., "LlamaCppBackend"]

SYSTEM = "<|start|>system<|message|>You are a test model.\nReasoning: low<|end|>"
DEVELOPER = "<|start|>developer<|message|># Instructions\n\nAnswer briefly.<|end|>"


def user_prompt(text: str, history: str = "") -> str:
    """A rendered Harmony prompt: fixed prefix, history, a user message, assistant's turn."""
    return f"{SYSTEM}{DEVELOPER}{history}<|start|>user<|message|>{text}<|end|><|start|>assistant"
