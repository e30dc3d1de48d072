"""The kernels of a :class:`~lmc.computer.computer.Computer`, one per language.

Made on first use (on this machine, or on a gateway), taken from a launch ahead
(:mod:`lmc.computer.ahead`), replaced when they died or were restarted, forgotten when they
could not start. The folder of the local kernels' files and the network namespace they share
are made with the first local kernel and live as long as the computer.
"""

from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmc.computer.ahead import KernelAhead, local_session, missing_program, shared_network
from lmc.computer.kernel_events import Kernel
from lmc.computer.languages import Language
from lmc.computer.runtime import default_runtime_dir, shutdown_all
from lmc.computer.sandbox import SandboxPolicy
from lmc.computer.sandbox.shared_net import SharedNetwork
from lmc.computer.state import KernelState
from lmc.errors import ComputerError

if TYPE_CHECKING:
    from lmc.computer.gateway import GatewayConfig

__all__ = ["KernelSet"]


class KernelSet:
    """What :class:`~lmc.computer.computer.Computer` keeps of its kernels (set up by its
    ``__init__``) and how it makes, takes, replaces and drops them."""

    gateway: GatewayConfig | None
    python: str | None
    cwd: Path | None
    sandbox: SandboxPolicy
    state: KernelState | None
    _lock: threading.RLock
    _closed: bool
    _sessions: dict[str, Kernel]
    _fresh: set[str]
    _runtime_dir: Path | None
    _network: SharedNetwork | None
    _finalizer: Any  # weakref.finalize: the kernels go when the computer is collected
    _retiring: list[threading.Thread]

    def adopt(self, ahead: KernelAhead) -> bool:
        """Take a kernel launched ahead of this computer (:func:`lmc.computer.ahead.launch_ahead`)
        as its kernel for that language, with its folder and network namespace. Only a new
        local computer made with the same sandbox, workdir, interpreter and state takes it;
        otherwise it is shut down (False) and the language's kernel starts as usual."""
        with self._lock:
            fits = (
                not self._closed
                and self.gateway is None
                and not self._sessions
                and self._runtime_dir is None
                and self._network is None
                and ahead.fits(sandbox=self.sandbox, cwd=self.cwd, python=self.python)
                and ahead.fits(state=self.state)
            )
            if fits:
                ahead.taken()
                self._own_runtime_dir(ahead.runtime_dir)
                self._network = ahead.network
                self._sessions[ahead.language] = ahead.session
        if not fits:
            ahead.close()
        return fits

    def _session(self, language: Language, *, connect: bool = True) -> Kernel:
        assert language.kernel is not None
        with self._lock:
            session = self._sessions.get(language.name)
            if session is None:
                if self._closed:  # no kernel starts after close() (a late prestart, a run)
                    raise ComputerError("this computer has been closed")
                session = self._new_session(language)
                self._sessions[language.name] = session
        if connect:
            session.start()
        else:
            session.launch()
        return session

    def _replace(self, language: Language, *, expected: Kernel | None = None) -> Kernel:
        """A fresh kernel for ``language``; with ``expected``, only if that one is current."""
        assert language.kernel is not None
        with self._lock:
            current = self._sessions.get(language.name)
            if expected is not None and current is not None and current is not expected:
                return current  # someone already replaced it (restart() meanwhile)
            if self._closed:
                raise ComputerError("this computer has been closed")
            old = self._sessions.pop(language.name, None)
            session = self._new_session(language)
            self._sessions[language.name] = session
        if old is not None:
            retiring = threading.Thread(target=old.shutdown, name="lmc-shutdown", daemon=True)
            retiring.start()
            self._retiring = [t for t in self._retiring if t.is_alive()] + [retiring]
        session.start()
        return session

    def _forget(self, language: Language, session: Kernel) -> None:
        """Drop a kernel that failed to start, so the next run tries again."""
        with self._lock:
            if self._sessions.get(language.name) is session:
                del self._sessions[language.name]
        session.shutdown()

    def _missing(self, language: Language) -> bool:
        """A local kernel's program is not installed (a gateway brings its own)."""
        return self.gateway is None and missing_program(language)

    def _new_session(self, language: Language) -> Kernel:
        assert language.kernel is not None
        if self.gateway is not None:
            from lmc.computer.gateway_kernel import GatewayKernel

            return GatewayKernel(self.gateway, language.name)
        runtime_dir = self._runtime_dir
        if runtime_dir is None:
            runtime_dir = default_runtime_dir()
            self._own_runtime_dir(runtime_dir)
        restore = language.name not in self._fresh
        self._fresh.discard(language.name)
        return local_session(
            language,
            python=self.python,
            runtime_dir=runtime_dir,
            cwd=self.cwd,
            sandbox=self.sandbox,
            state=self.state,
            restore=restore,
            network=self._shared_network(),
        )

    def _own_runtime_dir(self, runtime_dir: Path) -> None:
        """The folder of this computer's local kernels, removed with them."""
        self._runtime_dir = runtime_dir
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, shutdown_all, self._sessions, runtime_dir)

    def _shared_network(self) -> SharedNetwork | None:
        """The network namespace the kernels share (bubblewrap, no network), made once."""
        if self._network is None:
            self._network = shared_network(self.sandbox)
        return self._network
