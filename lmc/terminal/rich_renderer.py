"""The interactive renderer: Markdown messages, code panels, live output, images, spinners.

Theory of operation: one :class:`rich.live.Live` region at a time shows the block being
written or run. ``feed`` only appends to the block's buffers, so it costs the model almost
nothing; Live's own thread redraws the region ``refresh_per_second`` times a second, never
per token. The live region shows at most a screenful (the tail of the block), so it can
always be erased; when a block completes, the region is erased and the whole block is printed
once, statically, into the scrollback.

The hooks receive text already sanitized (:mod:`lmc.terminal.base`); notes naming files and
errors are sanitized here. A block's output is kept in an
:class:`~lmc.terminal.fold.OutputWindow`, so however much the code prints the view holds a
few dozen lines and each redraw costs the same.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.segment import Segment
from rich.spinner import Spinner
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

from lmc.errors import LmcError
from lmc.messages.sanitize import for_terminal
from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.base import BlockRenderer
from lmc.terminal.fold import OutputWindow
from lmc.terminal.images import Protocol, describe_image, inline_sequence

__all__ = ["RichRenderer"]

LEXERS = {
    "python": "python",
    "shell": "bash",
    "javascript": "javascript",
    "r": "r",
    "applescript": "applescript",
    "html": "html",
    "apply_patch": "diff",  # a patch as it streams: its + and - lines coloured
}
CODE_THEME = "monokai"
ACTIVE_LINE = Style(bgcolor="grey30", bold=True)


class _Tail:
    """Shows only the last screenful of a renderable, so a live region stays erasable."""

    def __init__(self, renderable: RenderableType, reserve: int = 2) -> None:
        self.renderable = renderable
        self.reserve = reserve

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        keep = max(console.size.height - self.reserve, 3)
        lines = console.render_lines(self.renderable, options.update(height=None), pad=False)
        for line in lines[-keep:]:
            yield from line
            yield Segment.line()


#: A line that is only a number and a dot or parenthesis ("42."): Markdown reads it as an empty
#: numbered list item and shows nothing.
_BARE_NUMBER = re.compile(r"^( {0,3}\d{1,9})([.)])([ \t]*)$", re.MULTILINE)


def _numbers_kept(text: str) -> str:
    """``text`` with bare-number lines escaped, so an answer of "42." shows as 42."""
    return _BARE_NUMBER.sub(r"\1\\\2\3", text)


#: ``<https://...>`` (an autolink) and ``[https://x](https://x)``: a link whose text is its URL.
_URL_AS_LINK = re.compile(
    r"<((?:https?|ftp|mailto):[^>\s]+)>|\[((?:https?|ftp)://[^\]\s]+)\]\(\2\)"
)


def _links_as_text(text: str) -> str:
    """Links whose text is the URL, as that text: the renderer shows every link as ``text
    (URL)``, and the URL would otherwise appear twice."""
    return _URL_AS_LINK.sub(lambda m: m.group(1) or m.group(2), text)


class _TextView:
    """A message, reasoning, note or user text being written."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.renders = 0  # how often it was drawn (the throttle test reads it)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def build(self) -> RenderableType:
        text = self.text
        if self.kind == "message":
            # URLs as text, not only inside an OSC 8 escape: a terminal without hyperlinks
            # showed the link's text alone, and a link's text can name another place.
            return Markdown(
                _links_as_text(_numbers_kept(text)), code_theme=CODE_THEME, hyperlinks=False
            )
        if self.kind == "reasoning":
            return Group(
                Text("reasoning", style="dim bold"),
                Padding(Text(text.strip("\n"), style="dim italic"), (0, 0, 0, 2)),
            )
        if self.kind == "user":
            return Text("> " + text, style="bold")
        if self.kind == "notice":
            return Text("⚠ " + text.strip("\n"), style="yellow")
        return Text(text.strip("\n"), style="yellow")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.renders += 1
        yield self.build()


class _Thinking:
    """The one-line live status while the model reasons out of sight: a spinner, the seconds
    it has thought and its latest complete line of reasoning, cut to the terminal's width."""

    def __init__(self, view: _TextView, clock: Callable[[], float] = time.monotonic) -> None:
        self.view = view
        self.clock = clock
        self.started = clock()
        self._spinner = Spinner("dots")

    def seconds(self) -> int:
        return int(self.clock() - self.started)

    def line(self) -> str:
        text = self.view.text
        complete = text[: text.rfind("\n")] if "\n" in text else ""
        lines = [line.strip() for line in complete.split("\n") if line.strip()]
        latest = f" · {lines[-1]}" if lines else ""
        return f"thinking {self.seconds()}s{latest}"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = Text(self.line(), style="dim", no_wrap=True, overflow="ellipsis")
        text.truncate(max(options.max_width - 3, 10), overflow="ellipsis")
        self._spinner.update(text=text)
        yield self._spinner


class _CodeView:
    """A code block: its code, then (while and after it runs) its output."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.parts: list[str] = []
        self.output = OutputWindow()
        self.active_line: int | None = None
        self.progress: str | None = None
        self.running = False
        self.ran = False
        self.code_printed = False  # printed statically before a confirmation question
        self.after: list[Callable[[], None]] = []  # images/HTML notes to print after it

    @property
    def code(self) -> str:
        return "".join(self.parts)

    def code_panel(self) -> Panel:
        code = self.code.rstrip("\n")
        # A tool call's "language" is SERVER.TOOL and its code JSON arguments.
        lexer = LEXERS.get(self.language, "json" if "." in self.language else "text")
        syntax = Syntax(
            code,
            lexer,
            theme=CODE_THEME,
            word_wrap=True,
            background_color="default",
        )
        line = self.active_line
        if self.running and line is not None and 1 <= line <= code.count("\n") + 1:
            width = len(code.split("\n")[line - 1])
            syntax.stylize_range(ACTIVE_LINE, (line, 0), (line, max(width, 1)))
        return Panel(syntax, title=self.language or "code", title_align="left", border_style="blue")

    def output_panel(self) -> Panel | None:
        if self.output.empty and not self.running:
            return None
        folded = self.output.folded()
        body = Text(folded.head)
        if folded.hidden_lines:
            body.append("\n" + folded.note + "\n", style="dim italic")
            body.append(folded.tail)
        subtitle = None
        if self.running and self.code_printed and self.active_line is not None:
            lines = self.code.split("\n")
            if 1 <= self.active_line <= len(lines):
                shown = lines[self.active_line - 1].strip()[:60]
                subtitle = f"running line {self.active_line}: {shown}"
        if self.running and self.progress:
            subtitle = self.progress[:80]
        title = "output" + (" (running)" if self.running else "")
        return Panel(
            body,
            title=title,
            title_align="left",
            subtitle=subtitle,
            subtitle_align="left",
            border_style="dim",
        )

    def build(self, *, include_code: bool) -> RenderableType:
        parts: list[RenderableType] = []
        if include_code:
            parts.append(self.code_panel())
        output = self.output_panel()
        if output is not None:
            parts.append(output)
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.build(include_code=not self.code_printed)


class RichRenderer(BlockRenderer):
    """Draws the chunk stream on a rich console (a terminal)."""

    def __init__(
        self,
        console: Console,
        *,
        show_reasoning: bool = False,
        artifacts: ArtifactStore | None = None,
        image_protocol: Protocol | None = None,
        open_html: Callable[[Path], Any] | None = None,
        refresh_per_second: float = 12,
    ) -> None:
        super().__init__()
        self.console = console
        self.show_reasoning = show_reasoning
        self.artifacts = artifacts
        self.image_protocol = image_protocol
        self.open_html = open_html
        self.refresh_per_second = refresh_per_second
        self._live: Live | None = None
        self._text: _TextView | None = None
        self._code: _CodeView | None = None
        self._spinning = False
        self._thinking: _Thinking | None = None

    # -- the live region ------------------------------------------------------------------
    def _show(self, view: RenderableType) -> None:
        if self._live is None:
            self._live = Live(
                _Tail(view),
                console=self.console,
                refresh_per_second=self.refresh_per_second,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        else:
            self._live.update(_Tail(view))

    def _stop_live(self) -> None:
        self._spinning = False
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def _print(self, renderable: RenderableType) -> None:
        self._stop_live()
        self.console.print(renderable)

    # -- public extras the CLI uses -----------------------------------------------------------
    def waiting(self, text: str = "thinking…") -> None:
        """Show a spinner until the next block begins."""
        hidden = self.block == "reasoning" and not self.show_reasoning
        if (self.block is None or hidden) and not self._spinning:
            self._show(Spinner("dots", text=Text(text, style="dim")))
            self._spinning = True

    def pause(self) -> None:
        """Freeze the screen before a question; the confirm view then shows the code (with
        line numbers, head and tail), so it is not printed here a second time."""
        if self._code is not None and not self._code.running:
            self._code.code_printed = True
        self._stop_live()

    def edited(self, code: str) -> None:
        """The person edited the code before running it: show (and highlight) the new code."""
        if self._code is not None:
            self._code.parts = [for_terminal(code)]
            self._code.code_printed = False

    def interrupted(self, note: str = "interrupted") -> None:
        """Ctrl-C: print what was there, then a note; the live region is gone afterwards."""
        self.close()
        self.console.print(Text(f"⏹ {note}", style="dim"))

    def close(self) -> None:
        super().close()
        self._stop_live()

    # -- hooks ------------------------------------------------------------------------------
    def open_block(self, block: str, language: str) -> None:
        self._spinning = False
        if block == "code":
            self._code = _CodeView(language)
            self._show(self._code)
        elif block == "reasoning" and not self.show_reasoning:
            self._text = _TextView(block)
            self._thinking = _Thinking(self._text)
            self._show(self._thinking)
            self._spinning = True
        else:
            self._text = _TextView(block)
            self._show(self._text)

    def on_text(self, block: str, text: str) -> None:
        if block == "code" and self._code is not None:
            self._code.parts.append(text)
        elif self._text is not None:
            self._text.parts.append(text)

    def close_block(self, block: str) -> None:
        if block == "code" and self._code is not None:
            view, self._code = self._code, None
            self._print(view.build(include_code=not view.code_printed))
            for action in view.after:
                action()
            if view.ran:
                self.waiting()
            return
        view_text, self._text = self._text, None
        if block == "reasoning" and not self.show_reasoning:
            thinking, self._thinking = self._thinking, None
            if thinking is not None:  # folded to one line; %reasoning show expands it
                summary = f"thought for {thinking.seconds()}s (%reasoning show shows it)"
                self._print(Text(summary, style="dim"))
            return
        if view_text is None:
            return
        if block == "message":
            self._print(view_text.build())
            self.console.print()
        else:
            self._print(view_text.build())

    def on_confirmation(self, language: str, code: str) -> None:
        if self._code is None:
            self._open_code_for(language, code)

    def _open_code_for(self, language: str, code: str) -> None:
        self.block, self.language = "code", language
        self._code = _CodeView(language)
        self._code.parts.append(code)
        self._show(self._code)

    def on_console_start(self) -> None:
        if self._code is None:
            self._open_code_for(self.language, "")
            assert self._code is not None
            self._code.code_printed = True
        self._code.running = True
        self._code.ran = True
        self._spinning = False
        self._show(self._code)

    def on_active_line(self, line: int | None) -> None:
        if self._code is not None:
            self._code.active_line = line

    def on_output(self, text: str) -> None:
        if self._code is not None:
            self._code.output.add(text)

    def on_progress(self, status: str) -> None:
        if self._code is not None:
            self._code.progress = status
            self._show(self._code)

    def on_console_end(self) -> None:
        if self._code is not None:
            self._code.running = False
            self._code.active_line = None

    def _later(self, action: Callable[[], None]) -> None:
        if self._code is not None:
            self._code.after.append(action)
        else:
            live = self._live is not None
            self._stop_live()
            action()
            if live and self._text is not None:
                self._show(self._text)

    def _problem(self, text: str) -> None:
        """An output that could not be kept: one line, and the turn goes on."""
        self.console.print(Text(for_terminal(text), style="yellow"), soft_wrap=True)

    def on_image(self, fmt: str, content: str) -> None:
        if self.artifacts is None:
            return
        try:
            path, data = self.artifacts.save_image(fmt, content)
        except LmcError as exc:
            problem = f"🖼  {exc}"
            self._later(lambda: self._problem(problem))
            return

        def show() -> None:
            if self.image_protocol is not None and data:
                self.console.file.write(inline_sequence(data, self.image_protocol))
                self.console.file.flush()
            note = Text(for_terminal(f"🖼  {describe_image(data)} saved to {path}"), style="cyan")
            self.console.print(note, soft_wrap=True)

        self._later(show)

    def on_files(self, lines: list[str]) -> None:
        text = Text("files changed", style="cyan")
        for line in lines:
            text.append("\n  " + line, style="red" if line.startswith("deleted") else "cyan")
        self._later(lambda: self.console.print(text, soft_wrap=True))

    def on_html(self, content: str) -> None:
        if self.artifacts is None:
            return
        try:
            path = self.artifacts.save_html(content)
        except LmcError as exc:
            problem = str(exc)
            self._later(lambda: self._problem(problem))
            return
        opened = ""
        if self.open_html is not None and self.open_html(path):
            opened = " and opened in your browser"

        def show() -> None:
            self.console.print(Text(f"HTML saved to {path}{opened}", style="cyan"), soft_wrap=True)

        self._later(show)
