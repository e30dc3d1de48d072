"""The sandbox the settings ask for, and the settings an interpreter gets with it resolved.

Apart from :mod:`lmc.cli.session` (which loads the messages and the terminal): ``lmc run``
reads these before it launches its shell kernel (:mod:`lmc.cli.head_start`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from lmc.settings import Settings

__all__ = ["interpreter_settings", "resolve_sandbox", "sandbox_limits"]


def sandbox_limits(settings: Settings) -> Any:
    """The sandbox's limits: the defaults, with what the config raises or lowers."""
    from lmc.agent.computer_options import sandbox_limits as changed_limits
    from lmc.computer.sandbox import Limits

    return changed_limits(settings) or Limits()


def resolve_sandbox(settings: Settings) -> tuple[Any, str | None]:
    """The sandbox policy ``settings`` ask for, and the warning to give about it (if any)."""
    from lmc.computer.sandbox import resolve_policy

    return resolve_policy(
        settings.sandbox,
        network=settings.network,
        workdir=settings.workdir,
        hide=settings.sandbox_hide,
        env=settings.sandbox_env,
        keep_writable=settings.sandbox_writable,
        limits=sandbox_limits(settings),
    )


def interpreter_settings(settings: Settings, policy: Any) -> Settings:
    """The settings an interpreter gets: the sandbox ``policy`` resolved from ``settings``."""
    return dataclasses.replace(
        settings,
        # The terminal's Confirmer holds the run-without-asking policy (-y, "a", %auto_run),
        # so the Interpreter always asks it.
        auto_run=False,
        sandbox=policy.mode,
        network=policy.network,
        workdir=str(policy.workdir),
    )
