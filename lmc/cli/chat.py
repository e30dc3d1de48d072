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
from lmc.config import Settings, config_path, data_dir
from lmc.errors import ConfigError, LmcError
from lmc.terminal.confirm import Confirmer, NoTerminalError
from lmc.terminal.question import Terminal
from lmc.terminal.signals import Terminated, closing, exit_status, terminate_like_interrupt

__all__ = ["chat", "load_with_spinner", "make_confirmer"]


def make_confirmer(output: Output, settings: Settings, terminal: Terminal | None) -> Confirmer:
    """The confirmer for a command: asks on ``terminal`` (None: nobody to ask), with the
    approval rules of the config, and saves rules the person keeps forever there."""
    from lmc.agent.approvals import Approvals
    from lmc.terminal.saved_rules import save_rule

    try:
        approvals = Approvals.from_config(settings.approve_allow)
    except ValueError as exc:
        raise ConfigError(f"approve.allow: {exc}", hint="fix it in the config file") from exc
    path = config_path()
    return Confirmer(
        auto_run=settings.auto_run,
        ask=None,
        terminal=terminal,
        say=terminal.say if terminal is not None else output.say,
        screen=None if output.mode == "json" else output.renderer,
        approvals=approvals,
        save_rule=lambda text: save_rule(path, text),
    )


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


#: Messages a resumed chat shows (the whole transcript is `lmc history show ID`).
RESUME_SHOWN = 6


def _replay_history(interpreter: Any, output: Output) -> None:
    """Show where the resumed conversation stands: its last few messages, not all of it."""
    messages = list(interpreter.messages)
    earlier = len(messages) - RESUME_SHOWN
    if earlier > 0:
        ident = interpreter.conversation_id
        output.say(f"… {earlier} earlier messages (lmc history show {ident} shows them all)")
    for message in messages[-RESUME_SHOWN:]:
        output.renderer.feed(message)
    output.renderer.close()


def _json_chat(interpreter: Any, output: Output, confirmer: Confirmer, settings: Settings) -> int:
    """--json chat: each line of standard input is a message; chunks go to stdout."""
    for line in stdin_lines():
        if not line.strip():
            continue
        try:
            run_turn(interpreter, line.rstrip("\n"), output, confirmer)
        except NoTerminalError as exc:  # nobody can say yes: stop, do not decline silently
            return report(exc, verbose=settings.verbose)
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
    terminal = Terminal.open()
    try:
        return _chat_on(interpreter, output, settings, terminal, resumed=resumed)
    finally:
        if terminal is not None:
            terminal.close()


def _chat_on(
    interpreter: Any,
    output: Output,
    settings: Settings,
    terminal: Terminal | None,
    *,
    resumed: bool,
) -> int:
    from lmc.terminal.magic import ChatState

    confirmer = make_confirmer(output, settings, terminal)
    interpreter.prestart()  # the kernels boot while the model loads and the person types
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
    state = ChatState(
        interpreter, confirmer, output.say, verbose=settings.verbose, renderer=output.renderer
    )
    output.say("type a message · %help for commands · Ctrl-D to quit")
    if prompt.problem is not None:
        output.say(prompt.problem)
    with no_control_echo():
        _loop(prompt, interpreter, output, confirmer, state)
    return 0


def _loop(prompt: Any, interpreter: Any, output: Output, confirmer: Confirmer, state: Any) -> None:
    from lmc.agent.loop import STEP_LIMIT
    from lmc.terminal.magic import is_magic, run_magic

    go_on = False  # the last turn stopped at the step limit: Enter lets the model go on
    while True:
        line = prompt.read()
        if line is None:
            break
        if not line.strip():
            if not go_on:
                continue
            line = "continue"
        go_on = False
        try:
            if is_magic(line):
                run_magic(line, state)
            else:
                if state.attachments:  # %mcp attach / %mcp prompt: sent with this message
                    line = "\n\n".join([line, *state.attachments])
                    state.attachments.clear()
                turn = run_turn(interpreter, line, output, confirmer)
                go_on = any(note.startswith(STEP_LIMIT) for note in turn.notes[-1:])
                if go_on:
                    output.say("press Enter to let the model go on (sends 'continue')")
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
