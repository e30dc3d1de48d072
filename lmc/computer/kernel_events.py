"""What a kernel, local or remote, offers lmc, and what running code on it yields.

:meth:`Kernel.execute` yields the kernel's IOPub messages (plain dicts) and these fault events:
:class:`KernelDied`, :class:`TimedOut`, :class:`InterruptIgnored`.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from lmc.computer.sandbox import SandboxPolicy

__all__ = [
    "InterruptIgnored",
    "Kernel",
    "KernelDied",
    "KernelEvent",
    "TimedOut",
    "describe_exit",
]


@dataclass(frozen=True)
class KernelDied:
    """The kernel process exited (or, remote, was lost) while a request was running."""

    returncode: int | None
    #: What happened, in words, when there is no local exit status to describe (a remote
    #: kernel the gateway restarted, or a gateway that went away).
    reason: str | None = None

    def describe(self) -> str:
        """How it died, in words ("exit status 3", "killed by SIGSEGV (a crash)")."""
        return self.reason if self.reason is not None else describe_exit(self.returncode)


@dataclass(frozen=True)
class TimedOut:
    """The run hit its time limit; the kernel has been interrupted, unless the run was
    started with ``hand_back`` (then it goes on, for the consumer to keep as a job)."""

    seconds: float
    handed_back: bool = False


@dataclass(frozen=True)
class InterruptIgnored:
    """The kernel did not stop within the grace time after an interrupt; it was killed."""

    seconds: float


KernelEvent = dict[str, Any] | KernelDied | TimedOut | InterruptIgnored

#: Why a process was killed, by signal name, where the name alone does not say it.
_SIGNAL_CAUSES = {
    "SIGSEGV": " (a crash)",
    "SIGBUS": " (a crash)",
    "SIGABRT": " (an abort)",
    "SIGKILL": " (from outside, often the out-of-memory killer)",
}


def describe_exit(returncode: int | None) -> str:
    """A kernel process's end in words."""
    if returncode is None:
        return "it stopped answering"
    if returncode >= 0:
        return f"it exited with status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"it was killed by {name}{_SIGNAL_CAUSES.get(name, '')}"


class Kernel(Protocol):
    """What :class:`~lmc.computer.Computer` needs of a kernel, local or remote.

    :class:`lmc.computer.kernel.KernelSession` runs one on this machine;
    :class:`lmc.computer.gateway_kernel.GatewayKernel` has a Jupyter Kernel/Enterprise Gateway
    run one.
    """

    sandbox: SandboxPolicy | None
    started_at: float | None

    @property
    def ready(self) -> bool: ...

    @property
    def alive(self) -> bool: ...

    def death(self) -> str:
        """How the kernel ended, in words, once it is not alive."""
        ...

    def out_of_memory(self) -> bool:
        """Whether lmc's sandbox's memory limit killed one of its processes."""
        ...

    def start(self) -> None:
        """Start the kernel in the background, ready for code."""
        ...

    def launch(self) -> None:
        """Start it in the background without what can wait until code comes."""
        ...

    def wait_ready(self) -> None: ...

    def interrupt(self) -> None: ...

    def shutdown(self) -> None: ...

    def execute(
        self, code: str, *, timeout: float | None = None, hand_back: bool = False
    ) -> Iterator[KernelEvent]: ...
