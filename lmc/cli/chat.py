"""``lmc``: the interactive chat loop (prompt, %commands, one turn per message)."""

from __future__ import annotations

import sys
from typing import Any

from lmc.cli.options import SharedOptions
from lmc.cli.session import (
    Output,
    open_session,
    report,
    run_turn,
    warn_cpu_only_once,
)
from lmc.cli.streams import stdin_lines
from lmc.config import Settings, data_dir
from lmc.errors import LmcError
from lmc.terminal.confirm import Asker, Confirmer
from lmc.terminal.signals import Terminated, closing, exit_status, terminate_like_interrupt

__all__ = ["chat", "load_with_spinner", "stdin_asker"]


def stdin_asker(output: Output) -> Asker | None:
    """Ask on the terminal when standard input is one; None when there is nobody to ask."""
    if not sys.stdin.isatty():
        return None
    if output.mode == "rich" and output.console is not None:
        console = output.console
        from rich.text import Text

        def ask_rich(question: str) -> str:
            return str(console.input(Text(question, style="bold yellow")))

        return ask_rich

    def ask_plain(question: str) -> str:
        target = sys.stderr if output.mode == "json" else sys.stdout
        target.write(question)
        target.flush()
        line = next(stdin_lines(), "")
        if not line:
            raise EOFError
        return line

    return ask_plain


def load_with_spinner(interpreter: Any, output: Output, settings: Settings) -> None:
    """Create the model backend now, with a spinner, so the first message is not a long wait."""
    if output.mode == "rich" and output.console is not None:
        what = settings.api_base or settings.model or "the default model"
        with output.console.status(f"loading {what}…", spinner="dots"):
            interpreter.load()
    else:
        interpreter.load()
    if settings.verbose:
        reason = getattr(interpreter.backend, "context_reason", "")
        if reason:
            sys.stderr.write(f"lmc: context: {reason}\n")
        dialect = getattr(interpreter.backend, "dialect_reason", "")
        if dialect:
            sys.stderr.write(f"lmc: dialect: {interpreter.backend.dialect} ({dialect})\n")


def _replay_history(interpreter: Any, output: Output) -> None:
    for message in list(interpreter.messages):
        output.renderer.feed(message)
    output.renderer.close()


def _json_chat(interpreter: Any, output: Output, confirmer: Confirmer, settings: Settings) -> int:
    """--json chat: each line of standard input is a message; chunks go to stdout."""
    for line in stdin_lines():
        if not line.strip():
            continue
        try:
            run_turn(interpreter, line.rstrip("\n"), output, confirmer)
        except LmcError as exc:
            report(exc, verbose=settings.verbose)
    return 0


def chat(options: SharedOptions) -> int:
    """Run the chat until Ctrl-D (or SIGTERM/SIGHUP: 128 + N); return the exit status."""
    with terminate_like_interrupt():
        session = open_session(options)
        if isinstance(session, int):
            return session
        try:
            status = _chat(
                session.interpreter,
                session.output,
                session.settings,
                resumed=session.conversation_id is not None,
            )
        except LmcError as exc:
            status = report(exc, verbose=session.settings.verbose)
        except Terminated:
            status = 0
        finally:
            with closing():
                session.interpreter.close()
        return exit_status(status)  # 128 + N after SIGTERM/SIGHUP, even one during the close


def _chat(interpreter: Any, output: Output, settings: Settings, *, resumed: bool) -> int:
    from lmc.terminal.magic import ChatState

    confirmer = Confirmer(
        auto_run=settings.auto_run,
        ask=stdin_asker(output),
        say=output.say,
        screen=None if output.mode == "json" else output.renderer,
    )
    load_with_spinner(interpreter, output, settings)
    if output.mode == "json":
        return _json_chat(interpreter, output, confirmer, settings)
    from lmc.terminal.rerun import offer_reruns

    offer_reruns(interpreter, confirmer, output.renderer)  # a person at the terminal only
    from lmc.backends import is_server_shortcut

    if not (settings.api_base or settings.replay or is_server_shortcut(settings.model)):
        warn_cpu_only_once(output.say)
    if resumed:
        _replay_history(interpreter, output)
    from lmc.terminal.input import ChatInput
    from lmc.terminal.tty import no_control_echo

    prompt = ChatInput(data_dir() / "prompt_history")
    state = ChatState(interpreter, confirmer, output.say, verbose=settings.verbose)
    output.say("type a message · %help for commands · Ctrl-D to quit")
    if prompt.problem is not None:
        output.say(prompt.problem)
    with no_control_echo():
        _loop(prompt, interpreter, output, confirmer, state)
    return 0


def _loop(prompt: Any, interpreter: Any, output: Output, confirmer: Confirmer, state: Any) -> None:
    from lmc.terminal.magic import is_magic, run_magic

    while True:
        line = prompt.read()
        if line is None:
            break
        if not line.strip():
            continue
        try:
            if is_magic(line):
                run_magic(line, state)
            else:
                if state.attachments:  # %mcp attach / %mcp prompt: sent with this message
                    line = "\n\n".join([line, *state.attachments])
                    state.attachments.clear()
                run_turn(interpreter, line, output, confirmer)
        except Terminated:
            raise
        except KeyboardInterrupt:
            output.renderer.close()
            output.say("interrupted")
        except LmcError as exc:
            output.renderer.close()
            report(exc, verbose=state.verbose)
        except Exception as exc:  # a bug must not end the chat and lose the session
            output.renderer.close()
            report(exc, verbose=state.verbose)
