"""Running the model's code in Jupyter kernels, streamed back as LMC computer chunks.

Public names are imported when first asked for: ``lmc run`` launches its shell kernel from the
sandbox and kernel modules before it loads the rest of this package (:mod:`lmc.cli.head_start`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["DEFAULT_OUTPUT_LIMIT", "BoundedOutput", "Computer", "bound_output", "kernels_dir"]

if TYPE_CHECKING:
    from lmc.computer.computer import Computer
    from lmc.computer.kernelspecs import kernels_dir
    from lmc.computer.output import DEFAULT_OUTPUT_LIMIT, BoundedOutput, bound_output

_HOMES = {
    "Computer": "lmc.computer.computer",
    "kernels_dir": "lmc.computer.kernelspecs",
    "DEFAULT_OUTPUT_LIMIT": "lmc.computer.output",
    "BoundedOutput": "lmc.computer.output",
    "bound_output": "lmc.computer.output",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'lmc.computer' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
