"""Questions to the person, on the controlling terminal (``/dev/tty``), never on stdout.

Standard output carries the answer (or ``--json``) and may be a file or a pipe; standard
input may be the prompt. So every question (confirm, edit, reason, a yes/no offer) is written
to and read from the terminal itself, and standard input is never read or closed here.
:func:`ask_yes_no` is the small entry point for other parts of the terminal (the sandbox's
"run it again with the network on?" offer).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import TYPE_CHECKING, TextIO

from lmc.agent.display import open_terminal
from lmc.messages.sanitize import for_terminal
from lmc.paths import host_which, neutral_dir

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = ["Terminal", "ask_yes_no"]


class Terminal:
    """The person's terminal: draws views and asks questions on it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._console: Console | None = None

    @classmethod
    def open(cls) -> Terminal | None:
        """The controlling terminal, or None when there is nobody to ask."""
        stream = open_terminal()
        return None if stream is None else cls(stream)

    @property
    def console(self) -> Console:
        """A rich console on the terminal (plain under ``NO_COLOR`` and ``TERM=dumb``)."""
        if self._console is None:
            from rich.console import Console

            from lmc.terminal.tty import console_options

            self._console = Console(file=self.stream, highlight=False, **console_options())
        return self._console

    @staticmethod
    def size() -> os.terminal_size:
        """The terminal's size now (it may have been resized since the last question)."""
        for fd in (0, 2, 1):
            try:
                return os.get_terminal_size(fd)
            except OSError:
                continue
        return os.terminal_size((80, 24))

    @property
    def height(self) -> int:
        return max(self.size().lines, 8)

    def show(self, renderable: RenderableType) -> None:
        size = self.size()
        self.console.size = (size.columns, size.lines)
        self.console.print(renderable)

    def say(self, text: str) -> None:
        """A note for the person (not part of the answer on stdout), sanitized: notes name
        files, tools and servers the model and code chose."""
        self.stream.write(f"lmc: {for_terminal(text)}\n")
        self.stream.flush()

    def ask(self, question: str) -> str:
        """Write ``question`` and read one line (EOFError when the terminal has gone).

        Questions quote the block (its language, a command prefix offered as a rule), so they
        are sanitized like everything else drawn here."""
        self.stream.write(for_terminal(question))
        self.stream.flush()
        line = self.stream.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def page(self, text: str) -> None:
        """Show ``text`` whole in the person's pager (``$PAGER``, else less), on the terminal.

        The text is sanitized first: ``less -R`` would pass colour escapes through."""
        text = for_terminal(text)
        command = shlex.split(os.environ.get("PAGER", "")) or (
            [less, "-R"] if (less := host_which("less")) else []
        )
        if command:
            try:
                fd = os.open(os.ctermid(), os.O_WRONLY | os.O_NOCTTY)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    subprocess.run(
                        command,
                        input=text,
                        text=True,
                        stdout=fd,
                        stderr=fd,
                        check=False,
                        cwd=neutral_dir(),  # not the working directory: the code's files
                    )
                    return
                except OSError:
                    pass
                finally:
                    os.close(fd)
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()


def ask_yes_no(question: str, terminal: Terminal | None = None) -> bool:
    """Ask ``question`` [y/N] on the terminal; False without one, or on anything but yes."""
    opened = terminal is None
    terminal = Terminal.open() if terminal is None else terminal
    if terminal is None:
        return False
    try:
        reply = terminal.ask(f"{question} [y/N] ")
    except EOFError:
        return False
    finally:
        if opened:
            terminal.close()
    return reply.strip().lower() in ("y", "yes")
