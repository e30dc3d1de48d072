"""``lmc doctor``'s context row for a server: the size it serves and where that was read."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmc.backends.detect import Detected


def served_context_row(found: Detected, context_size: int | None) -> tuple[str, bool, str]:
    """("context", good, e.g. "4,096 tokens (Ollama /api/ps)"); ``--context`` wins."""
    from lmc.backends.served import read_served

    if context_size is not None:
        return ("context", True, f"{context_size:,} tokens: as set (--context or the config file)")
    return ("context", True, read_served(found.config, found.dialect).reason)
