"""The ``lmc`` command's entry point (the console script ``lmc.cli.app:main``).

A plain ``lmc run`` (:mod:`lmc.cli.run_args`) starts at once, without typer; every other
command line goes to the typer app (:mod:`lmc.cli.commands`, also reachable here as ``app``),
which reads it and answers help, mistakes and completion as always.
"""

from __future__ import annotations

import errno
import gc
import sys
from typing import Any

__all__ = ["main"]  # and ``app``, built on first use (__getattr__)


def main() -> None:
    """Console-script entry point. The cyclic garbage collector waits while lmc starts: the
    imports and set-up allocate hundreds of thousands of objects that all stay alive, so its
    passes then find nothing to free (10-15 ms of a plain ``lmc run``'s start); it runs again
    from the first turn (:func:`lmc.cli.oneshot.run_once`) or the command typer reads."""
    gc.disable()
    from lmc.cli.streams import run_cli

    run_cli(_command_line)


def _command_line() -> None:
    plain = None
    if sys.argv[1:2] == ["run"]:
        from lmc.cli.run_args import read_run_args

        plain = read_run_args(sys.argv[1:])
    if plain is None:
        gc.freeze()
        gc.enable()
        from lmc.cli.commands import app

        app()
        return
    try:
        status = _run(plain)
    except EOFError:  # as typer ends a command on these
        sys.stderr.write("\nAborted!\n")
        status = 1
    except KeyboardInterrupt:
        status = 130
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        status = 1  # the reader went away: quietly, as typer does
    raise SystemExit(status)


def _run(plain: Any) -> int:
    """``run_command`` of :mod:`lmc.cli.commands` for arguments read without typer; the
    shell kernel is launched first (:mod:`lmc.cli.head_start`) and shut down on every way
    out unless the run's interpreter took it."""
    from lmc.cli.head_start import launch_shell
    from lmc.cli.run_args import probe_sandbox_early
    from lmc.terminal.signals import Terminated, closing, exit_status, terminate_like_interrupt

    probe_sandbox_early(plain.given.get("sandbox"))
    head_start = None
    with terminate_like_interrupt():  # as run_once's: a SIGTERM meanwhile ends it like Ctrl-C
        try:
            head_start = launch_shell(plain)
            from lmc.cli.oneshot import run_once
            from lmc.cli.options import SharedOptions

            status = run_once(
                plain.prompt,
                SharedOptions(**plain.given),
                audio=plain.audio,
                head_start=head_start,
                process_ends=True,
            )
        except Terminated:
            from lmc.cli.session import EXIT_INTERRUPTED

            status = EXIT_INTERRUPTED
        finally:
            if head_start is not None:
                with closing():
                    head_start.close()
        return exit_status(status)


def __getattr__(name: str) -> Any:
    """``app``: the typer app, built when first asked for."""
    if name == "app":
        from lmc.cli.commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
