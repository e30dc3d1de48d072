"""The CLI's boundary with its standard streams and arguments.

- Input is UTF-8 or it is refused in one line (:class:`~lmc.errors.InputError`), never
  turned into surrogates that fail later, deep inside, as a "bug".
- The process ends as soon as the command returned (:func:`_exit_now`): every command has
  closed what it opened by then, and Python's own teardown of ~1,000 modules cost ~80 ms a run.
- A reader that goes away (``lmc run --json ... | head -1``) ends lmc quietly, as it ends
  any Unix tool: :func:`lmc.cli.session.report` lets ``BrokenPipeError`` through to typer,
  which exits 1 without a word. A standard output closed from the start is one line.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Final

from lmc.errors import InputError

__all__ = ["check_text", "read_stdin", "run_cli", "stdin_lines"]


def _not_utf8(what: str, exc: UnicodeError) -> InputError:
    bad = ""
    if isinstance(exc, UnicodeDecodeError):
        bad = f" (byte 0x{exc.object[exc.start]:02x})"
    return InputError(f"{what} is not UTF-8 text{bad}", hint="convert it, e.g. with iconv")


def check_text(text: str, what: str) -> str:
    """``text`` if it is valid Unicode; Python turns non-UTF-8 bytes in argv into lone
    surrogates, which cannot be stored, rendered or tokenized."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raw = text.encode("utf-8", "surrogateescape")
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as decode_error:
            raise _not_utf8(what, decode_error) from None
        raise _not_utf8(what, exc) from None
    return text


def read_stdin() -> str:
    """All of standard input as text."""
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as exc:
        raise _not_utf8("standard input", exc) from None


def stdin_lines() -> Iterator[str]:
    """Standard input line by line, as it comes."""
    try:
        yield from sys.stdin
    except UnicodeDecodeError as exc:
        raise _not_utf8("standard input", exc) from None


def _strict_utf8_stdin() -> None:
    stdin = sys.stdin
    if isinstance(stdin, io.TextIOWrapper):
        stdin.reconfigure(encoding="utf-8", errors="strict")


#: Modules the CLI's process never needs but its libraries import when they are installed:
#: httpcore imports trio (on purpose, since httpcore#692; trio comes with selenium in a dev
#: environment), httpx imports its own command line (click, pygments and rich's progress bars)
#: when those happen to be installed. ~100 ms of a start together; each library has a fallback
#: for the module being absent, which this takes. Only the command line does this: the
#: library, imported into someone else's program, leaves their imports alone.
UNUSED_IMPORTS: Final = ("trio", "httpx._main")


def _skip_unused_imports() -> None:
    for name in UNUSED_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "not importable"


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")  # SystemExit("message"), as Python itself prints it
    return 1


def _exit_now(status: int) -> None:
    """End the process once the command returned: run the exit handlers (kernels' and
    temporary files' finalizers among them), flush, and skip the interpreter's teardown."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()  # a reader gone away (EPIPE) changes nothing now
    os._exit(status)


def _interruptible() -> None:
    """Ctrl-C works even when lmc was started with SIGINT ignored (``lmc run ... &`` in a
    script: the shell ignores it for background commands, and Python then installs no
    handler): without this a SIGINT would neither stop a turn nor free a kernel."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_cli(app: Callable[[], object]) -> None:
    """Run the click/typer ``app`` with these rules at its edge."""
    if sys.stdout is None:  # started with standard output closed (>&-)
        if sys.stderr is not None:
            sys.stderr.write("lmc: error: standard output is closed\n")
        raise SystemExit(1)
    _strict_utf8_stdin()
    _skip_unused_imports()
    _interruptible()
    try:
        app()  # typer ends a command that met a closed pipe quietly (status 1)
    except SystemExit as exc:
        _exit_now(_exit_status(exc.code))
    _exit_now(0)
