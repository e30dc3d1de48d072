"""The agent: the loop from a person's words to a final answer, and its Python API.

:class:`Interpreter` is imported on first use, so that ``lmc run`` can read the agent's small
modules (the conversation id, the kernel state's folder) before the whole agent loads
(:mod:`lmc.cli.head_start`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmc.agent.interpreter import Interpreter

__all__ = ["Interpreter"]


def __getattr__(name: str) -> Any:
    if name == "Interpreter":
        from lmc.agent.interpreter import Interpreter

        return Interpreter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
