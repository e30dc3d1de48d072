"""The keywords :class:`lmc.Computer` is made with, from the settings.

Apart from :mod:`lmc.agent.pieces` (which loads the backends' configuration): ``lmc run``
reads these before it launches its shell kernel (:mod:`lmc.cli.head_start`).
"""

from __future__ import annotations

from typing import Any

from lmc.settings import Settings

__all__ = ["sandbox_limits", "sandbox_options"]


def sandbox_options(s: Settings) -> dict[str, Any]:
    """The keywords :class:`lmc.Computer` is made with."""
    return {
        "sandbox": s.sandbox,
        "network": s.network,
        "workdir": s.workdir,
        "hide": s.sandbox_hide,
        "sandbox_env": s.sandbox_env,
        "sandbox_writable": s.sandbox_writable,
        "sandbox_limits": sandbox_limits(s),
        "python": s.python,  # the person's own interpreter for the python kernel
        "block_timeout": s.block_timeout,  # a longer block goes on as a job (0: never)
    }


def sandbox_limits(s: Settings) -> Any:
    """The sandbox's limits when the config changes any (None: the sandbox's defaults)."""
    sizes = (s.sandbox_processes, s.sandbox_memory, s.sandbox_tmp_size, s.sandbox_shm_size)
    if all(value is None for value in sizes):
        return None
    from lmc.computer.sandbox import Limits

    return Limits.chosen(*sizes)
