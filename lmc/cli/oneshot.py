"""``lmc run``: one prompt, one answer, an exit status that says whether there was one."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

from lmc.cli.chat import load_with_spinner, make_confirmer
from lmc.cli.options import SharedOptions
from lmc.cli.session import (
    EXIT_INTERRUPTED,
    EXIT_LOOP,
    EXIT_NO_ANSWER,
    EXIT_USAGE,
    open_session,
    report,
    run_turn,
)
from lmc.cli.streams import check_text, read_stdin
from lmc.errors import InputError, LmcError
from lmc.messages import Message
from lmc.messages.sanitize import for_terminal
from lmc.terminal.question import Terminal
from lmc.terminal.signals import Terminated, closing, exit_status, terminate_like_interrupt

__all__ = ["run_once"]


def _stderr(text: str) -> None:
    sys.stderr.write(f"lmc: {for_terminal(text)}\n")  # may carry a server's or the model's words
    sys.stderr.flush()


def _read_prompt(prompt: str | None) -> str | None:
    if prompt is not None and prompt != "-":
        return check_text(prompt, "the prompt")
    if prompt is None and sys.stdin.isatty():
        return None
    return read_stdin()


def _read_audio(audio: str) -> Message | int:
    """The LMC audio message for ``--audio FILE`` ('-': stdin), checked to be WAV."""
    from lmc.voice import audio_message

    try:
        data = sys.stdin.buffer.read() if audio == "-" else Path(audio).expanduser().read_bytes()
    except OSError as exc:
        _stderr(f"error: cannot read the audio file {audio}: {exc.strerror or exc}")
        return EXIT_USAGE
    try:
        return audio_message(data)
    except LmcError as exc:
        _stderr(f"error: {audio}: {exc}")
        return EXIT_USAGE


def _message(prompt: str | None, audio: str | None) -> Message | str | int:
    """What to ask: the prompt's text, or the audio message; an exit status on bad usage."""
    if audio is not None:
        if prompt is not None:
            _stderr("error: give a prompt or --audio FILE, not both")
            return EXIT_USAGE
        return _read_audio(audio)
    try:
        text = _read_prompt(prompt)
    except InputError as exc:
        report(exc, verbose=False)
        return EXIT_USAGE
    if text is None:
        _stderr('error: no prompt: give one (lmc run "...") or pipe it on standard input')
        return EXIT_USAGE
    if not text.strip():
        _stderr("error: the prompt is empty")
        return EXIT_USAGE
    return text.strip("\n")


def run_once(
    prompt: str | None,
    options: SharedOptions,
    audio: str | None = None,
    head_start: Any = None,
    *,
    process_ends: bool = False,
) -> int:
    """Ask once (with text, or speech from ``audio``); 0 on a final answer, 3 without one
    (4 when the loop guard stopped a model repeating itself),
    1 on an error, 2 on bad usage, 130 on Ctrl-C and 128 + N on signal N (SIGTERM, SIGHUP),
    after the same orderly close. ``head_start``: the shell kernel launched ahead
    (:mod:`lmc.cli.head_start`), for the interpreter to take. ``process_ends``: the process
    ends after this (``lmc run``'s own): the final close does not wait for the kernels'
    control groups to empty (the next lmc removes them,
    :func:`lmc.computer.sandbox.limits.process_ending`)."""
    with terminate_like_interrupt():
        try:
            status = _run_once(prompt, options, audio, head_start, process_ends)
        except Terminated:
            status = EXIT_INTERRUPTED
        return exit_status(status)  # also for a signal that came while lmc was closing


def _run_once(
    prompt: str | None, options: SharedOptions, audio: str | None, head_start: Any, ends: bool
) -> int:
    message = _message(prompt, audio)
    if isinstance(message, int):
        return message
    session = open_session(options, head_start)
    if isinstance(session, int):
        return session
    settings, output, interpreter = session.settings, session.output, session.interpreter
    verbose = settings.verbose
    terminal = None if settings.auto_run else Terminal.open()
    try:
        confirmer = make_confirmer(output, settings, terminal)
        if output.mode != "json":
            from lmc.terminal.rerun import offer_reruns

            offer_reruns(interpreter, confirmer, output.renderer)
        interpreter.prestart()  # the kernels boot in their own processes meanwhile
        load_with_spinner(interpreter, output, settings)
        gc.freeze()  # what the start made stays: collections from now on skip it
        gc.enable()  # off while lmc started (lmc.cli.app.main)
        turn = run_turn(interpreter, message, output, confirmer)
    except LmcError as exc:
        output.renderer.close()
        return report(exc, verbose=verbose)
    except Exception as exc:
        output.renderer.close()
        report(exc, verbose=verbose)
        return 1
    finally:
        with closing():
            if ends:
                from lmc.computer.sandbox.limits import process_ending

                process_ending()
            interpreter.close()
        if terminal is not None:
            terminal.close()
    if turn.final_answer:
        return 0
    if turn.interrupted:
        _stderr("interrupted")
        return EXIT_INTERRUPTED
    _stderr(f"no final answer: {turn.reason}")
    from lmc.agent.loop_guard import LOOP_STOP

    if any(note.startswith(LOOP_STOP) for note in turn.notes[-1:]):
        return EXIT_LOOP
    return EXIT_NO_ANSWER
