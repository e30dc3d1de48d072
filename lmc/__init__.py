"""lmc: a local agent runtime for gpt-oss models.

Public names are imported lazily so that ``import lmc`` (and ``lmc --help``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Computer", "Interpreter", "__version__"]

if TYPE_CHECKING:
    from lmc.agent import Interpreter
    from lmc.computer import Computer


def __getattr__(name: str) -> Any:
    if name == "Computer":
        from lmc.computer import Computer

        return Computer
    if name == "Interpreter":
        from lmc.agent import Interpreter

        return Interpreter
    raise AttributeError(f"module 'lmc' has no attribute {name!r}")
