"""``lmc.Computer``: runs the model's code and streams what happens as LMC chunks.

One kernel per language, started on first use or ahead of time (:meth:`Computer.prestart`).
A run yields the console start flag, active lines and output as they happened, the null
active line and the end flag; every fault (unknown language, a kernel that cannot start, dies,
hangs or runs too long) becomes output in that stream, never an exception. Kernels run in the
sandbox of :mod:`lmc.computer.sandbox`; a block that ran into it ends with one line saying so,
and :meth:`Computer.run_relaxed` can run it once more in a throwaway kernel that has what it
lacked. On a :class:`~lmc.computer.gateway.GatewayConfig` the kernels run on a Jupyter
Gateway (:mod:`lmc.computer.gateway_kernel`), contained by the gateway, not by lmc.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import warnings
import weakref
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from lmc.computer.ahead import workdir_of
from lmc.computer.applescript import AppleScriptRunner
from lmc.computer.chunks import (
    MessageTranslator,
    active_line_chunk,
    console_end,
    console_start,
    output_chunk,
)
from lmc.computer.fault_notes import fault_note
from lmc.computer.html import run_html
from lmc.computer.job_input import job_input
from lmc.computer.jobs import JobTable, hand_back_chunks
from lmc.computer.kernel import InterruptIgnored, Kernel, KernelDied, KernelSession, TimedOut
from lmc.computer.kernel_set import KernelSet
from lmc.computer.languages import LANGUAGES, Language, resolve_language
from lmc.computer.output import OutputEnds
from lmc.computer.runtime import shutdown_all
from lmc.computer.sandbox import Limits, explain_block, lacked_by, resolve_policy
from lmc.computer.sandbox.shared_net import SharedNetwork
from lmc.computer.state import KernelState, lost_words, restore_note
from lmc.errors import ComputerError
from lmc.messages import Chunk

if TYPE_CHECKING:
    from lmc.computer.gateway import GatewayConfig

# The wire protocol's modules load with the Computer, not at the first block's connect: the
# kernel module leaves them out so that ``lmc run`` can launch its shell before them.
import lmc.computer.kernel_channels  # noqa: F401

__all__ = ["Computer"]

#: Yielded by :meth:`Computer._execute` where the run's time limit handed it back: the rest of
#: that stream belongs to a job from then on.
_HAND_BACK: Final[Chunk] = output_chunk("")

_KNOWN: Final = ", ".join(language.name for language in LANGUAGES)
#: What a block can lack and :meth:`Computer.run_relaxed` can give it once.
RELAXATIONS: Final = ("network", "unsandboxed")
#: Seconds close() waits, in all, for the shutdowns of replaced kernels (a remote one may be
#: restarting on its gateway, which answers the DELETE only after that).
RETIRE_WAIT: Final = 30.0


class Computer(KernelSet):
    """Runs code in Jupyter kernels (python, shell, javascript, r) and more.

    ``timeout``: the default per-run limit in seconds (None: none; the code is interrupted).
    ``block_timeout`` (None or 0: never) hands a longer block back to the model instead: the
    code goes on as a job in :attr:`jobs` (:mod:`lmc.computer.jobs`) and the run ends with its
    output so far and a note. ``workdir`` (or ``cwd``): where kernels start and, in
    ``workspace`` mode, the one place they may write (default: the current directory).
    ``sandbox``: ``"workspace"``, ``"read-only"``, ``"off"`` or None (workspace where a sandbox
    tool works, else off with a warning; asking for one where none works raises
    :class:`~lmc.errors.SandboxUnavailableError`); ``network`` lets sandboxed code use the
    network; ``hide`` adds hidden secrets (absolute, ``~`` or globs); ``sandbox_env`` names
    variables the code may see besides the allow-list; ``sandbox_writable`` keeps paths in the
    workdir writable (``.venv``, ``.git``); ``sandbox_limits``: processes, memory, /tmp sizes.
    ``gateway`` runs the kernels on a Jupyter Kernel/Enterprise Gateway; ``python`` runs the
    python kernel with that interpreter (a venv's, with ipykernel); ``state`` keeps the python
    and shell kernels' state and brings it back into every new kernel (:mod:`.state`).
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        cwd: str | Path | None = None,
        sandbox: str | None = None,
        network: bool = False,
        workdir: str | Path | None = None,
        hide: Sequence[str] = (),
        sandbox_env: Sequence[str] = (),
        sandbox_writable: Sequence[str] = (),
        sandbox_limits: Limits | None = None,
        gateway: GatewayConfig | None = None,
        python: str | None = None,
        state: KernelState | None = None,
        block_timeout: float | None = None,
    ) -> None:
        self.timeout = timeout
        #: Where kernels keep their state (None: not kept); read when a kernel starts.
        self.state = state
        self._fresh: set[str] = set()  # restarted on request: its next kernel restores nothing
        self.block_timeout = block_timeout or None
        #: Blocks handed back after ``block_timeout``, still running or not.
        self.jobs = JobTable()
        #: The one network namespace of this computer's sandboxed kernels (no network).
        self._network: SharedNetwork | None = None
        #: The interpreter that runs the python kernel (None: lmc's own), ``--python``.
        self.python = python
        self.gateway = gateway
        self.cwd = workdir_of(workdir if workdir is not None else cwd)
        self._hide = tuple(hide)
        self._extras: dict[str, Any] = {
            "env": tuple(sandbox_env),
            "keep_writable": tuple(sandbox_writable),
            "limits": sandbox_limits,
        }
        self.sandbox, warning = resolve_policy(
            sandbox, network=network, workdir=self.cwd, hide=self._hide, **self._extras
        )
        if warning is not None:
            warnings.warn(f"lmc: {warning}", RuntimeWarning, stacklevel=2)
        self._notice: str | None = None  # said once, before the next run's output
        self._lock = threading.RLock()  # reentrant: interrupt() may run in a signal handler
        self._sessions: dict[str, Kernel] = {}
        self._running: set[Kernel] = set()
        self._applescript = AppleScriptRunner()
        self._runtime_dir: Path | None = None
        self._closed = False
        #: Whether the last run failed: the code raised, the kernel could not run it, died or
        #: timed out, or there was nothing to run (``lmc mcp serve`` answers isError).
        self.last_run_failed = False
        #: What the sandbox denied the last run, when giving it would help: ``"network"`` or
        #: ``"unsandboxed"`` (see :meth:`run_relaxed`); None otherwise.
        self.last_run_lacked: str | None = None
        self._relaxed: set[Computer] = set()  # throwaway computers of run_relaxed, running
        #: Shutdowns of replaced kernels, in the background; close() waits for them.
        self._retiring: list[threading.Thread] = []
        self._finalizer = weakref.finalize(self, shutdown_all, self._sessions, None)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages :meth:`run` accepts (aliases such as ``bash`` or ``js`` also work)."""
        return tuple(language.name for language in LANGUAGES)

    # -- kernels ----------------------------------------------------------------------------

    def start(self, language: str, *, connect: bool = True, spawned: bool = False) -> None:
        """Start ``language``'s kernel in the background (unknown or missing ones: ignored).
        With ``connect=False`` a local kernel's process boots but lmc's side of its sockets
        waits for the next :meth:`start` or run (see :meth:`KernelSession.launch`); with
        ``spawned``, this returns once that process is spawned (a busy thread delays it)."""
        resolved = resolve_language(language)
        if resolved is None or resolved.kernel is None or self._missing(resolved):
            return
        with contextlib.suppress(ComputerError):  # run() will say what is wrong
            session = self._session(resolved, connect=connect)
            if spawned and isinstance(session, KernelSession):
                session.wait_launched()

    def prestart(self, languages: Iterable[str], *, connect: bool = True) -> None:
        """Start several kernels in the background (e.g. while the model is generating)."""
        for language in languages:
            self.start(language, connect=connect)

    def restart(self, language: str) -> None:
        """Replace ``language``'s kernel with a fresh one (its state is lost)."""
        resolved = resolve_language(language)
        if resolved is None or resolved.kernel is None:
            raise ComputerError(f"there is no kernel for {language!r} (known: {_KNOWN})")
        self._fresh.add(resolved.name)
        self._replace(resolved)

    def keep_state(self, state: KernelState | None) -> None:
        """Where kernels started from now on keep their state (None: nowhere)."""
        self.state = state

    def set_sandbox(self, mode: str | None = None, *, network: bool | None = None) -> list[str]:
        """Change the sandbox (and/or its network); running kernels are shut down so the
        next run starts contained the new way. Returns the languages whose state was lost;
        the next run's output starts by telling the model so. Kernels on a gateway are
        contained by the gateway, not this sandbox: they keep running."""
        policy, _ = resolve_policy(
            mode if mode is not None else self.sandbox.mode,
            network=self.sandbox.network if network is None else network,
            workdir=self.sandbox.workdir,
            hide=self._hide,
            **self._extras,
        )
        if self.gateway is not None:
            self.sandbox = policy
            return []
        with self._lock:
            self.sandbox = policy
            lost = [name for name, s in self._sessions.items() if s.started_at is not None]
            sessions = dict(self._sessions)
            self._sessions.clear()
        if lost:
            self._notice = (
                f"(The {', '.join(lost)} kernel{'s were' if len(lost) > 1 else ' was'} "
                f"restarted for the new sandbox ({policy.describe()}): "
                f"{lost_words(self.state, *lost)}.)\n"
            )
        threading.Thread(
            target=shutdown_all, args=(sessions, None), name="lmc-shutdown", daemon=True
        ).start()
        return lost

    def interrupt(self) -> None:
        """Stop whatever code is running now; kernels and their state survive."""
        with self._lock:
            running = list(self._running)
            relaxed = list(self._relaxed)
        for session in running:
            session.interrupt()
        for once in relaxed:
            once.interrupt()
        self._applescript.interrupt()

    def close(self) -> None:
        """Shut every kernel down and remove their connection files."""
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.values())
            self._sessions.clear()
        self.jobs.kill_all()  # a job's shell was handed its own kernel: it goes too
        deadline = time.monotonic() + RETIRE_WAIT
        for thread in self._retiring:  # a replaced kernel is gone too when close() returns
            thread.join(max(0.0, deadline - time.monotonic()))
        shutdown_all({str(i): s for i, s in enumerate(sessions)}, self._runtime_dir)
        if self._network is not None:
            self._network.close()
        self._finalizer.detach()
        if self.state is not None:  # a conversation whose kernels never ran: no empty folder
            with contextlib.suppress(OSError):
                self.state.folder.rmdir()

    @contextlib.contextmanager
    def frozen(self) -> Iterator[set[int]]:
        """Every process of the local kernels (and what their code started) stopped for the
        block: undo works on the files with nothing racing it. Yields the pids stopped."""
        from lmc.computer.freezing import frozen

        with self._lock:  # a gateway's kernels run elsewhere: they have no pid here
            pids = (getattr(s, "pid", None) for s in self._sessions.values())
            roots = [pid for pid in pids if isinstance(pid, int)]
        with frozen(roots) as stopped:
            yield stopped

    def __enter__(self) -> Computer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- running ----------------------------------------------------------------------------

    def run(self, language: str, code: str, timeout: float | None = None) -> Iterator[Chunk]:
        """Run ``code``; yield LMC computer chunks as it runs (see the module docstring)."""
        yield console_start()
        # False only for code that ran to its end without raising (see last_run_failed).
        self.last_run_failed = True
        self.last_run_lacked = None
        resolved = resolve_language(language)
        if resolved is None:
            yield output_chunk(f"lmc cannot run {language!r} code; it runs {_KNOWN}.\n")
        elif not code.strip():
            yield output_chunk(f"There was no {resolved.name} code to run.\n")
        elif self._closed:
            yield output_chunk("This computer has been closed; no code can run on it.\n")
        elif resolved.runner == "html":
            yield from run_html(code, network=self.sandbox.network or not self.sandbox.enabled)
            self.last_run_failed = False
        elif resolved.runner == "applescript":
            yield from self._applescript.run(code, timeout=timeout or self.timeout)
            self.last_run_failed = False  # osascript's errors are only its output
        elif self._missing(resolved):
            yield output_chunk(
                f"{resolved.name} code needs `{resolved.requires}`, which is not installed: "
                f"{resolved.install_hint}.\n"
            )
        else:
            yield from self._run_kernel(resolved, code, timeout or self.timeout)
        yield active_line_chunk(None)
        yield console_end()

    def run_relaxed(
        self, language: str, code: str, lacked: str, timeout: float | None = None
    ) -> Iterator[Chunk]:
        """Run ``code`` once in a fresh kernel that has what the sandbox denied it
        (``"network"``: the network, still sandboxed; ``"unsandboxed"``: no sandbox), shut
        down right after; this computer's kernels and policy stay as strict as they were.
        Yields the same chunk stream as :meth:`run`."""
        if lacked not in RELAXATIONS or self.gateway is not None or not self.sandbox.enabled:
            raise ComputerError(f"cannot run a block again with {lacked!r} here")
        once = Computer(
            timeout=self.timeout,
            workdir=self.cwd,
            sandbox="off" if lacked == "unsandboxed" else self.sandbox.mode,
            network=True if lacked == "network" else self.sandbox.network,
            hide=self._hide,
            sandbox_env=self._extras["env"],
            sandbox_writable=self._extras["keep_writable"],
            sandbox_limits=self._extras["limits"],
        )
        with self._lock:
            self._relaxed.add(once)
        try:
            yield from once.run(language, code, timeout)
            self.last_run_failed = once.last_run_failed
            # With the network a block may get on to a refused write (``pip install``): that
            # can be offered next; without the sandbox it lacks nothing (None).
            self.last_run_lacked = once.last_run_lacked
        finally:
            with self._lock:
                self._relaxed.discard(once)
            once.close()

    def _ready(self, language: Language) -> Generator[Chunk, None, Kernel | None]:
        """The language's kernel, started (a dead one replaced); None when there is none."""
        try:
            session = self._session(language)
        except ComputerError as exc:  # no kernel spec for it (a broken install)
            yield output_chunk(f"lmc cannot run {language.name} code: {exc}.\n")
            return None
        if session.ready and not session.alive:
            yield output_chunk(
                f"The {language.name} kernel had died since the last run "
                f"({session.death()}); starting a fresh one: "
                f"{lost_words(self.state, language.name)}.\n"
            )
            try:
                session = self._replace(language, expected=session)
            except ComputerError as exc:
                yield output_chunk(f"{exc}\n")
                return None
        try:
            session.wait_ready()
        except ComputerError as exc:
            self._forget(language, session)
            hint = f"\n{language.install_hint}." if language.install_hint else ""
            yield output_chunk(f"{exc}{hint}\n")
            return None
        return session

    def _run_kernel(self, language: Language, code: str, timeout: float | None) -> Iterator[Chunk]:
        session = yield from self._ready(language)
        if session is None:
            return
        busy = self.jobs.holding(lambda job: job.holds is session)
        if busy is not None:
            yield output_chunk(
                f"The {language.name} kernel is still running job {busy.id} "
                f"({busy.command[:60]}); poll it with the jobs tool, or stop it, before "
                f"running more {language.name} code.\n"
            )
            return
        translator = MessageTranslator()
        notice, self._notice = self._notice, None
        if notice is not None:
            yield output_chunk(notice)
        restored = None if self.state is None else restore_note(self.state.folder, language.name)
        if restored is not None:
            yield output_chunk(restored)
        with self._lock:
            self._running.add(session)
        seen = OutputEnds()  # error messages are short: the ends of the output are enough
        hand_back = timeout is None and self.block_timeout is not None and not self.jobs.full()
        stream = self._execute(
            language, session, translator, code, timeout or self.block_timeout, hand_back=hand_back
        )
        try:
            for chunk in stream:
                if chunk is _HAND_BACK:
                    yield from self._hand_back(language, session, code, stream)
                    break
                if chunk["type"] == "console" and chunk.get("format") == "output":
                    seen.add(chunk.get("content") or "")
                yield chunk
        finally:
            with self._lock:
                self._running.discard(session)
        policy = session.sandbox
        if policy is None:
            return
        line = explain_block(seen.text(), policy, out_of_memory=session.out_of_memory())
        if line is not None:
            self.last_run_lacked = lacked_by(seen.text(), policy)
            yield output_chunk(("\n" if seen.open_line else "") + line + "\n")

    def _execute(
        self,
        language: Language,
        session: Kernel,
        translator: MessageTranslator,
        code: str,
        timeout: float | None,
        *,
        hand_back: bool = False,
    ) -> Iterator[Chunk]:
        handed_back = False
        try:
            faulted = False
            for event in session.execute(code, timeout=timeout, hand_back=hand_back):
                if isinstance(event, dict):
                    yield from translator.chunks(event)
                elif isinstance(event, TimedOut) and event.handed_back:
                    handed_back = True  # what follows is the job's, on its own thread
                    yield from translator.flush()
                    yield _HAND_BACK
                else:
                    faulted = True
                    yield from translator.flush()
                    yield output_chunk(self._fault(language, session, event))
            yield from translator.flush()
            if not handed_back:
                self.last_run_failed = faulted or translator.failed
        except ComputerError as exc:  # the kernel was shut down under the run (close, restart)
            yield from translator.flush()
            yield output_chunk(f"\nThe run was cut short: {exc}.\n")

    def _hand_back(
        self, language: Language, session: Kernel, code: str, rest: Iterator[Chunk]
    ) -> tuple[Chunk, Chunk]:
        """Make the rest of a run a job. A shell job keeps its kernel and stdin (a fresh
        shell takes the next block); another kernel stays busy with it."""
        fresh = language.name == "shell" and isinstance(session, KernelSession)
        if fresh:
            with self._lock:
                if self._sessions.get(language.name) is session:
                    del self._sessions[language.name]
        replace = functools.partial(self._replace_quietly, language, session)
        give_input, no_input = job_input(language.name, session, fresh=fresh)
        job = self.jobs.add(
            language.name, code, rest, interrupt=session.interrupt, holds=session,
            kill=session.shutdown if fresh else replace, give_input=give_input,
            on_end=session.shutdown if fresh else (lambda: None), no_input=no_input,
        )  # fmt: skip
        self.last_run_failed = False
        return hand_back_chunks(job, self.block_timeout or 0.0, fresh_shell=fresh)

    def _replace_quietly(self, language: Language, session: Kernel) -> None:
        with contextlib.suppress(ComputerError):  # closed: its kernels go anyway
            self._replace(language, expected=session)

    def _fault(
        self,
        language: Language,
        session: Kernel,
        fault: TimedOut | KernelDied | InterruptIgnored,
    ) -> str:
        """Say what went wrong; replace the kernel when it is gone or wedged."""
        if not isinstance(fault, TimedOut) and not self._closed:
            self._replace_quietly(language, session)  # closed meanwhile: nothing to replace
        lost = lost_words(self.state, language.name)
        return fault_note(fault, language.name, closed=self._closed, lost=lost)
