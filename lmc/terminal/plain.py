"""Plain-text rendering for pipes, files, ``NO_COLOR`` and dumb terminals: no escape codes.

Text streams as it arrives; code is fenced like Markdown; long output keeps its head as it
streams and prints the fold note and the tail when the block ends (the output is kept in an
:class:`~lmc.terminal.fold.OutputWindow`: bounded memory, time linear in the output). The
text reaching the hooks is already sanitized (:mod:`lmc.terminal.base`); lmc's own notes,
which name files the code made, are sanitized here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from lmc.errors import LmcError
from lmc.messages.sanitize import for_terminal
from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.base import BlockRenderer
from lmc.terminal.fold import OutputWindow
from lmc.terminal.images import describe_image

__all__ = ["PlainRenderer"]


class PlainRenderer(BlockRenderer):
    """Writes the stream as readable plain text to ``out``."""

    def __init__(
        self,
        out: TextIO,
        *,
        show_reasoning: bool = False,
        artifacts: ArtifactStore | None = None,
        open_html: Callable[[Path], Any] | None = None,
    ) -> None:
        super().__init__()
        self.out = out
        self.show_reasoning = show_reasoning
        self.artifacts = artifacts
        self.open_html = open_html  # shows a saved HTML file (a browser), True when it did
        self._at_line_start = True
        self._output = OutputWindow()
        self._output_shown = 0  # lines of output already written
        self._pending: list[str] = []  # notes to print once the block is done
        self._fence_open = False

    def _write(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self._at_line_start = text.endswith("\n")

    def _newline(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def open_block(self, block: str, language: str) -> None:
        self._newline()
        if block == "code" and language:
            self._write(f"```{language}\n")
            self._fence_open = True
        elif block == "reasoning" and self.show_reasoning:
            self._write("[reasoning]\n")
        elif block == "user":
            self._write("> ")
        elif block in ("note", "notice"):
            self._write("lmc: ")

    def on_text(self, block: str, text: str) -> None:
        if block == "reasoning" and not self.show_reasoning:
            return
        self._write(text)

    def on_code_end(self) -> None:
        if self._fence_open:
            self._fence_open = False
            self._newline()
            self._write("```\n")

    def close_block(self, block: str) -> None:
        self.on_code_end()
        if block == "reasoning" and not self.show_reasoning:
            return
        self._newline()
        if block != "code":
            self._write("\n")
        for note in self._pending:
            self._write(note + "\n")
        self._pending.clear()

    def on_console_start(self) -> None:
        self.on_code_end()
        self._output = OutputWindow()
        self._output_shown = 0

    def on_output(self, text: str) -> None:
        self._output.add(text)
        head = self._output.head
        if len(head) > self._output_shown:
            self._write("".join(line + "\n" for line in head[self._output_shown :]))
            self._output_shown = len(head)

    def on_console_end(self) -> None:
        folded = self._output.folded()
        if folded.hidden_lines:
            self._write(folded.note + "\n" + folded.tail + "\n")
        elif not self._output.empty:
            rest = folded.head.split("\n")[self._output_shown :]
            self._write("".join(line + "\n" for line in rest))
        self._output = OutputWindow()

    def _note(self, text: str) -> None:
        text = for_terminal(text)
        if self.block is None:
            self._newline()
            self._write(text + "\n")
        else:
            self._pending.append(text)

    def on_image(self, fmt: str, content: str) -> None:
        if self.artifacts is None:
            self._note("[image]")
            return
        try:
            path, data = self.artifacts.save_image(fmt, content)
        except LmcError as exc:
            self._note(f"[{exc}]")
            return
        self._note(f"[{describe_image(data)} saved to {path}]")

    def on_html(self, content: str) -> None:
        if self.artifacts is None:
            self._note("[HTML output]")
            return
        try:
            path: Path = self.artifacts.save_html(content)
        except LmcError as exc:
            self._note(f"[{exc}]")
            return
        opened = self.open_html is not None and bool(self.open_html(path))
        self._note(f"[HTML saved to {path}{' and opened in your browser' if opened else ''}]")

    def on_files(self, lines: list[str]) -> None:
        self._note("\n".join(["files changed:", *(f"  {line}" for line in lines)]))

    # -- the extras the CLI and the confirmer use ------------------------------------------
    def waiting(self, text: str = "thinking…") -> None:
        """Plain output shows no spinner."""

    def pause(self) -> None:
        """The code is already on screen; nothing to freeze."""
        self.on_code_end()

    def edited(self, code: str) -> None:
        """Show the code the person edited, which is what runs."""
        self._newline()
        self._write(f"```{self.language} (edited)\n{for_terminal(code.rstrip())}\n```\n")

    def interrupted(self, note: str = "interrupted") -> None:
        self.close()
        self._newline()
        self._write(f"[{note}]\n")
