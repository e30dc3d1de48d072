"""Contained execution: every kernel runs in an OS sandbox (bubblewrap, or Seatbelt on macOS).

:class:`SandboxPolicy` says what the code may do; :func:`resolve_policy` turns the person's
choice (a mode or None for "the default") into a policy, checking that the tool works;
:func:`wrap_command` turns a kernel's argv into the sandboxed one; :func:`explain_block`
writes the line that tells the person and the model a block was blocked.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from lmc.computer.sandbox.detect import INSTALL_HINT, SandboxTool, find_tool
from lmc.computer.sandbox.explain import PREFIX, explain_block
from lmc.computer.sandbox.launcher import launch
from lmc.computer.sandbox.policy import (
    DEFAULT_HIDDEN,
    MODES,
    Mode,
    SandboxPolicy,
    check_mode,
)
from lmc.errors import SandboxUnavailableError

__all__ = [
    "DEFAULT_HIDDEN",
    "INSTALL_HINT",
    "MODES",
    "PREFIX",
    "Mode",
    "SandboxPolicy",
    "SandboxTool",
    "check_mode",
    "explain_block",
    "find_tool",
    "launch",
    "resolve_policy",
    "wrap_command",
]


def resolve_policy(
    mode: str | None,
    *,
    network: bool = False,
    workdir: str | Path | None = None,
    hide: Sequence[str] = (),
) -> tuple[SandboxPolicy, str | None]:
    """The policy for ``mode`` (None: workspace where a sandbox works, else off) and a
    warning for the person when the default had to fall back to no sandbox.

    Raises :class:`SandboxUnavailableError` when a sandbox is asked for and cannot be had.
    """
    where = Path.cwd() if workdir is None else Path(workdir).expanduser()
    where = where.resolve()
    chosen = None if mode is None else check_mode(mode)
    base = SandboxPolicy(mode="off", network=network, workdir=where, hide=tuple(hide))
    if chosen == "off":
        return base, None
    tool = find_tool()
    if tool.usable:
        return SandboxPolicy(chosen or "workspace", network, where, tuple(hide)), None
    if chosen is not None:
        raise SandboxUnavailableError(
            f"--sandbox {chosen} needs a sandbox tool: {tool.problem}", hint=INSTALL_HINT
        )
    return base, f"code runs without a sandbox ({tool.problem}); {INSTALL_HINT}"


def wrap_command(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    shared: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    cwd: Path | None = None,
) -> list[str]:
    """``argv`` run inside the sandbox ``policy`` describes (unchanged when it is off)."""
    if not policy.enabled:
        return list(argv)
    tool = find_tool()
    if not tool.usable or tool.path is None:
        raise SandboxUnavailableError(f"the sandbox is gone: {tool.problem}", hint=INSTALL_HINT)
    if tool.kind == "seatbelt" or sys.platform == "darwin":
        from lmc.computer.sandbox.seatbelt import seatbelt_command

        return seatbelt_command(tool.path, policy, argv, shared=shared)
    from lmc.computer.sandbox.bubblewrap import bwrap_command

    return bwrap_command(tool.path, policy, argv, shared=shared, readable=readable, cwd=cwd)
