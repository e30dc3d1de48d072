"""``lmc run``'s shell kernel, launched as soon as the command line is read.

With a model that answers at once, the first block waits for the shell kernel to boot
(bubblewrap, then the wrapper kernel). Launched here, once the settings are known and before
lmc imports the agent, the terminal, the backends and even the Computer
(:mod:`lmc.computer.ahead`), the kernel boots on another core meanwhile instead of after them;
the server's context is asked meanwhile too (:func:`lmc.backends.served.read_ahead`). The
kernel is made as the interpreter's computer would make it: from the same settings and sandbox
policy, keeping the shell's state under the id the new conversation then gets. The
interpreter gets a computer that takes it (:meth:`HeadStart.hand_to`) only when its settings
are the same; otherwise, or when the run ends before (bad usage, an error, Ctrl-C, SIGTERM),
:meth:`HeadStart.close` shuts it down, kernel and all (:mod:`lmc.cli.app` calls it on every
way out)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from lmc.cli.run_args import RunArgs
from lmc.errors import LmcError
from lmc.settings import Settings

__all__ = ["HeadStart", "launch_shell"]

#: The kernel launched ahead: the first of :data:`lmc.agent.chatting.PRESTART`, whose module
#: is not imported this early (tests/cli/test_head_start.py checks the two agree).
FIRST_KERNEL = "shell"


@dataclass(slots=True)
class HeadStart:
    """A shell kernel booting for the interpreter ``lmc run`` makes."""

    loaded: Settings  # the settings read for the run (open_session takes them, not reads again)
    settings: Settings  # the interpreter's settings it was made for
    ahead: Any  # lmc.computer.ahead.KernelAhead
    conversation_id: str  # the new conversation's id, under which the shell keeps its state
    done: bool = False  # taken by the interpreter, or closed

    def hand_to(self, interpreter: Any) -> None:
        """Give ``interpreter`` a computer that runs the kernel if it has the same settings.
        The computer is made only now: its module loads after the kernel is launched."""
        if self.done or interpreter.settings != self.settings:
            return
        from lmc.agent.computer_options import sandbox_options
        from lmc.computer import Computer

        try:
            computer = Computer(
                **sandbox_options(self.settings), gateway=None, state=self.ahead.state
            )
        except LmcError:
            return  # the interpreter's own computer will say what is wrong; close() ends ours
        computer.adopt(self.ahead)  # or shuts it down: the computer starts its own shell
        interpreter.adopt_computer(computer, self.conversation_id)
        self.done = True

    def close(self) -> None:
        """Shut the kernel down unless the interpreter took it, and remove the state folder
        made for a conversation that never began."""
        from lmc.backends.served import drop_ahead

        drop_ahead()  # GETs sent ahead that the run never took
        if not self.done:
            self.done = True
            self.ahead.close()
            from lmc.agent.kept_state import delete_state

            delete_state(self.settings.db_path, self.conversation_id)


def _settings(run: RunArgs) -> tuple[Settings, Settings] | None:
    """The settings read for ``run`` and the interpreter's, or None when no kernel should
    start ahead:
    a run that will stop before its model (no prompt, or audio), a kernel gateway, a sandbox
    warning (said once, later), settings the run will refuse (it says why, later)."""
    if run.audio is not None or (run.prompt is None and sys.stdin.isatty()):
        return None
    if run.prompt is not None and not run.prompt.strip():
        return None
    from lmc.cli.options import SharedOptions
    from lmc.cli.sandbox_settings import interpreter_settings, resolve_sandbox
    from lmc.config import load_settings

    try:
        options = SharedOptions(**run.given)
        settings = load_settings(options.flags(), profile=options.profile)
        if settings.kernel_gateway:
            return None
        policy, warning = resolve_sandbox(settings)
    except LmcError:
        return None
    return None if warning is not None else (settings, interpreter_settings(settings, policy))


def launch_shell(run: RunArgs) -> HeadStart | None:
    """Launch ``run``'s shell kernel now, made as its interpreter's computer will make it;
    return once the process is spawned, the server's context being asked meanwhile
    (:func:`lmc.backends.served.read_ahead`). None when ``run`` should start no kernel ahead."""
    both = _settings(run)
    if both is None:
        return None
    loaded, settings = both
    from lmc.agent.computer_options import sandbox_options
    from lmc.agent.kept_state import kernel_state_for
    from lmc.agent.store_names import new_conversation_id
    from lmc.computer.ahead import launch_ahead

    conversation_id = new_conversation_id()
    state = kernel_state_for(settings, conversation_id)
    ahead = launch_ahead(FIRST_KERNEL, **sandbox_options(settings), state=state)
    head = None if ahead is None else HeadStart(loaded, settings, ahead, conversation_id)
    try:
        _read_served_ahead(settings)
    except BaseException:
        if head is not None:
            head.close()  # nothing else would end the kernel launched just now
        raise
    return head


def _read_served_ahead(settings: Settings) -> None:
    """The server's context GETs, sent now: the server answers while lmc loads the agent,
    and the backend takes the answers (one round trip fewer before the first request)."""
    if not settings.api_base or (settings.api_style or "").lower() == "ollama":
        return
    from lmc.agent.pieces import backend_config
    from lmc.backends.served import read_ahead

    read_ahead(backend_config(settings, None))
