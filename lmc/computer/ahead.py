"""A local kernel launched before :class:`~lmc.computer.computer.Computer` is even loaded.

``lmc run`` wants its shell kernel booting as early as it can (:mod:`lmc.cli.head_start`):
the kernel boots on another core while lmc loads the agent, the terminal and the backends.
Importing the Computer (its chunks, jobs, notes and the wire protocol) would come first and
make the launch ~20 ms later, so :func:`launch_ahead` launches the kernel from the sandbox and
kernel modules alone, made exactly as a Computer with the same keywords makes it
(:func:`local_session` is that one way), and :meth:`Computer.adopt` takes it once built, or
shuts it down when it was made some other way.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmc.computer.kernel import KernelSession
from lmc.computer.kernelspecs import kernel_spec
from lmc.computer.languages import Language, resolve_language
from lmc.computer.runtime import default_runtime_dir, release_runtime_dir, shutdown_all
from lmc.computer.sandbox import SandboxPolicy, resolve_policy
from lmc.computer.sandbox.shared_net import SharedNetwork
from lmc.computer.state import KernelState, kernel_options
from lmc.errors import LmcError
from lmc.paths import host_which

if TYPE_CHECKING:
    from collections.abc import Sequence

    from lmc.computer.sandbox import Limits

__all__ = ["KernelAhead", "launch_ahead", "local_session", "missing_program", "workdir_of"]


def workdir_of(workdir: str | Path | None) -> Path | None:
    """Where a computer's kernels start, as :class:`Computer` reads its ``workdir``."""
    return None if workdir is None else Path(workdir).expanduser().resolve()


def missing_program(language: Language) -> bool:
    """A local kernel's program (bash, node, R) is not installed."""
    return language.requires is not None and host_which(language.requires) is None


def shared_network(policy: SandboxPolicy) -> SharedNetwork | None:
    """The network namespace a computer's kernels share (bubblewrap, no network)."""
    if policy.network or not policy.enabled:
        return None
    return SharedNetwork.find()


def local_session(
    language: Language,
    *,
    python: str | None,
    runtime_dir: Path,
    cwd: Path | None,
    sandbox: SandboxPolicy,
    state: KernelState | None,
    restore: bool,
    network: SharedNetwork | None,
) -> KernelSession:
    """``language``'s kernel on this machine, as a computer makes it (not yet started)."""
    assert language.kernel is not None
    return KernelSession(
        kernel_spec(language.kernel, python=python),
        runtime_dir=runtime_dir,
        cwd=cwd,
        sandbox=sandbox,
        **kernel_options(state, language.name, restore=restore),
        network=network,
    )


@dataclass(eq=False)
class KernelAhead:
    """A kernel spawned ahead, with what it was made from and what it holds."""

    language: str
    session: KernelSession
    sandbox: SandboxPolicy
    cwd: Path | None
    python: str | None
    state: KernelState | None
    runtime_dir: Path
    network: SharedNetwork | None
    _finalizer: Any = field(default=None, repr=False)

    def fits(self, **made: Any) -> bool:
        """Whether a computer made with these (``sandbox``, ``cwd``, ``python``, ``state``)
        would have made this kernel the same way."""
        return all(getattr(self, name) == value for name, value in made.items())

    def taken(self) -> None:
        """A computer owns the kernel, its folder and its network from now on."""
        if self._finalizer is not None:
            self._finalizer.detach()

    def close(self) -> None:
        """Shut the kernel down and remove its folder and network namespace."""
        self.taken()
        _end({self.language: self.session}, self.runtime_dir, self.network)


def _end(
    sessions: dict[str, KernelSession], runtime_dir: Path, network: SharedNetwork | None
) -> None:
    """What a kernel launched ahead holds, ended (closed, or collected unclosed)."""
    shutdown_all(sessions, runtime_dir)
    if network is not None:
        network.close()


def launch_ahead(
    language: str,
    *,
    sandbox: str | None = None,
    network: bool = False,
    workdir: str | Path | None = None,
    hide: Sequence[str] = (),
    sandbox_env: Sequence[str] = (),
    sandbox_writable: Sequence[str] = (),
    sandbox_limits: Limits | None = None,
    python: str | None = None,
    state: KernelState | None = None,
    block_timeout: float | None = None,
) -> KernelAhead | None:
    """Spawn ``language``'s local kernel as a :class:`Computer` made with the same keywords
    would; return once the process is spawned. None where there is nothing to launch ahead
    (an unknown language, a missing program, a sandbox that would warn or fail: the Computer
    says so later). ``block_timeout`` is taken, as the Computer takes it, and not needed."""
    del block_timeout
    resolved = resolve_language(language)
    if resolved is None or resolved.kernel is None or missing_program(resolved):
        return None
    cwd = workdir_of(workdir)
    try:
        policy, warning = resolve_policy(
            sandbox,
            network=network,
            workdir=cwd,
            hide=tuple(hide),
            env=tuple(sandbox_env),
            keep_writable=tuple(sandbox_writable),
            limits=sandbox_limits,
        )
        if warning is not None:
            return None
        runtime_dir = default_runtime_dir()
    except LmcError:  # the Computer made later says what is wrong
        return None
    held = shared_network(policy)
    try:
        session = local_session(
            resolved,
            python=python,
            runtime_dir=runtime_dir,
            cwd=cwd,
            sandbox=policy,
            state=state,
            restore=True,
            network=held,
        )
    except LmcError:  # no kernel spec (a broken install): the Computer made later says so
        release_runtime_dir(runtime_dir)
        if held is not None:
            held.close()
        return None
    ahead = KernelAhead(resolved.name, session, policy, cwd, python, state, runtime_dir, held)
    ahead._finalizer = weakref.finalize(ahead, _end, {resolved.name: session}, runtime_dir, held)
    session.launch()
    session.wait_launched()
    return ahead
