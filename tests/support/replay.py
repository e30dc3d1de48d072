"""Write replay files for tests: ``from support.replay import write_replay``.

A replay file holds the assistant's completions in order, exactly as the model would emit
them (special tokens as their markers), each ending in ``<|call|>`` or ``<|return|>``, one
per line (the newline after a stop marker is a separator). ``lmc --replay FILE`` (or
``BackendConfig(replay=...)``) forces the real model, through llama.cpp's own sampler, to
emit them: each sampling call consumes the next completion, and asking for one more than the
file holds is a clear error. See :mod:`lmc.backends.replay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lmc.backends.replay import format_replay

__all__ = ["write_replay"]


def write_replay(path: Path, completions: Sequence[str]) -> Path:
    """Write ``completions`` as a replay file at ``path`` and return the path."""
    path.write_text(format_replay(completions), encoding="utf-8")
    return path
