"""Contained execution: every kernel runs in an OS sandbox (bubblewrap, or Seatbelt on macOS).

:class:`SandboxPolicy` says what the code may do; :func:`resolve_policy` turns the person's
choice (a mode or None for "the default") into a policy, checking that the tool works;
:func:`prepare_launch` turns a kernel's argv and environment into the sandboxed ones (with
the seccomp filter's descriptor and the kernel's limits); :func:`explain_block` writes the
line that tells the person and the model a block was blocked, :func:`lacked_by` what it lacked.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lmc.computer.sandbox.detect import INSTALL_HINT, SandboxTool, find_tool
from lmc.computer.sandbox.explain import PREFIX, explain_block, lacked_by
from lmc.computer.sandbox.launcher import launch
from lmc.computer.sandbox.limits import KernelLimits, Limits, find_backend
from lmc.computer.sandbox.policy import (
    DEFAULT_HIDDEN,
    MODES,
    Mode,
    SandboxPolicy,
    check_hide,
    check_mode,
    check_workdir,
)
from lmc.errors import SandboxUnavailableError

__all__ = [
    "DEFAULT_HIDDEN",
    "INSTALL_HINT",
    "MODES",
    "PREFIX",
    "Limits",
    "Mode",
    "SandboxLaunch",
    "SandboxPolicy",
    "SandboxTool",
    "check_mode",
    "explain_block",
    "find_tool",
    "lacked_by",
    "launch",
    "prepare_launch",
    "resolve_policy",
    "wrap_command",
]


def resolve_policy(
    mode: str | None,
    *,
    network: bool = False,
    workdir: str | Path | None = None,
    hide: Sequence[str] = (),
    env: Sequence[str] = (),
    keep_writable: Sequence[str] = (),
    limits: Limits | None = None,
) -> tuple[SandboxPolicy, str | None]:
    """The policy for ``mode`` (None: workspace where a sandbox works, else off) and a
    warning for the person when the default had to fall back to no sandbox.

    Raises :class:`SandboxUnavailableError` when a sandbox is asked for and cannot be had,
    and :class:`~lmc.errors.ConfigError` for a hide entry or working directory it cannot use.
    """
    where = Path.cwd() if workdir is None else Path(workdir).expanduser()
    where = where.resolve()
    chosen = None if mode is None else check_mode(mode)
    base = SandboxPolicy(
        mode="off",
        network=network,
        workdir=where,
        hide=tuple(hide),
        env=tuple(env),
        keep_writable=tuple(keep_writable),
        limits=limits or Limits(),
    )
    if chosen == "off":
        return base, None
    check_hide(hide)
    tool = find_tool()
    if tool.usable:
        check_workdir(where)
        return replace(base, mode=chosen or "workspace"), None
    if chosen is not None:
        raise SandboxUnavailableError(
            f"--sandbox {chosen} needs a sandbox tool: {tool.problem}", hint=INSTALL_HINT
        )
    return base, f"code runs without a sandbox ({tool.problem}); {INSTALL_HINT}"


@dataclass
class SandboxLaunch:
    """How to start one sandboxed kernel: ``argv`` and ``env`` for the process,
    ``pass_fds`` it inherits, and what to undo when it is gone (:meth:`close`)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    limits: KernelLimits | None = None
    _fds: list[int] = field(default_factory=list)

    def started(self) -> None:
        """The process has its copies of the descriptors: close lmc's."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def out_of_memory(self) -> bool:
        return self.limits is not None and self.limits.out_of_memory()

    def close(self) -> None:
        """The kernel is gone: close what is left, remove its control groups."""
        self.started()
        if self.limits is not None:
            self.limits.remove()


def prepare_launch(
    policy: SandboxPolicy,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    kernel_env: Mapping[str, str] | None = None,
    shared: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    cwd: Path | None = None,
    private_root: Path | None = None,
    join_network: Callable[[], Sequence[str]] | None = None,
    in_place: bool = False,
) -> SandboxLaunch:
    """The sandboxed start of ``argv``: command line, filtered environment, seccomp
    descriptor and limits (unchanged argv and environment when the policy is off).
    ``join_network`` (what gives a :class:`~.shared_net.SharedNetwork`'s prefix, asked for
    last) starts it in the session's shared network namespace when the policy has no network;
    ``in_place``: ``argv`` is a Python script the connect guard's step may run in its own
    process (lmc's wrapper kernels)."""
    if not policy.enabled:
        return SandboxLaunch(list(argv), {**env, **(kernel_env or {})})
    from lmc.computer.sandbox.env import sandbox_env

    tool = find_tool()
    if not tool.usable or tool.path is None:
        raise SandboxUnavailableError(f"the sandbox is gone: {tool.problem}", hint=INSTALL_HINT)
    clean = sandbox_env(env, listed=policy.env, kernel=kernel_env)
    if tool.kind == "seatbelt" or sys.platform == "darwin":
        from lmc.computer.sandbox.seatbelt import seatbelt_command

        return SandboxLaunch(seatbelt_command(tool.path, policy, argv, shared=shared), clean)
    from lmc.computer.sandbox.bubblewrap import bwrap_command
    from lmc.computer.sandbox.connect_guard import ConnectGuard, guard_connects
    from lmc.computer.sandbox.seccomp import seccomp_fd

    guard = None if policy.network or not guard_connects() else ConnectGuard.create()
    fd = seccomp_fd()

    bwrap = tool.path

    def sandboxed(own_network: bool) -> list[str]:
        return bwrap_command(
            bwrap,
            policy,
            argv,
            shared=shared,
            readable=[*readable, *([] if guard is None else guard.readable())],
            cwd=cwd,
            private_root=private_root,
            seccomp_fd=fd,
            own_network=own_network,
            launcher=() if guard is None else guard.prefix(in_place=in_place),
        )

    joining = join_network is not None and not policy.network
    command = sandboxed(own_network=not joining)
    # Asked for only now: a holder started ahead made its namespace meanwhile.
    join = list(join_network()) if join_network is not None and joining else []
    if joining and not join:  # the holder could not start: a namespace of its own
        command = sandboxed(own_network=True)
    command = [*join, *command]
    fds = ([] if fd is None else [fd]) + ([] if guard is None else list(guard.fds))
    limits = KernelLimits(find_backend(), policy.limits)
    try:
        command = [*limits.create(), *command]
    except OSError as exc:
        for descriptor in fds:
            os.close(descriptor)
        limits.remove()
        raise SandboxUnavailableError(f"could not set the sandbox's limits: {exc}") from exc
    return SandboxLaunch(command, clean, tuple(fds), limits, fds)


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
