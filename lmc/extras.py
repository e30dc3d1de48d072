"""Optional parts of lmc (``pip install "lmc[NAME]"``): a clear line when one is missing.

``server`` (lmc serve), ``voice`` (speech input) and ``mcp`` (MCP servers, ``lmc mcp``) pull
in heavy dependencies that a plain ``lmc run`` does not need, so they are extras; the code
that needs one asks :func:`require` first instead of failing on an ImportError deep inside.
"""

from __future__ import annotations

import importlib.util
from typing import Final

from lmc.errors import MissingExtraError

__all__ = ["EXTRAS", "require"]

#: extra -> (the module that shows it is installed, what it is for)
EXTRAS: Final = {
    "mcp": ("mcp", "MCP servers"),
    "server": ("uvicorn", "lmc serve"),
    "voice": ("faster_whisper", "speech input"),
}


def require(extra: str) -> None:
    """Raise :class:`MissingExtraError` (with the pip command) when ``extra`` is missing."""
    module, purpose = EXTRAS[extra]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken one
        found = False
    if not found:
        raise MissingExtraError(
            f"{purpose} need the {extra} extra, which is not installed ({module} is missing)",
            hint=f'pip install "lmc[{extra}]"',
        )
