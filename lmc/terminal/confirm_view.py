"""The confirm view: the block being asked about, exactly as it will run, at any terminal size.

It names the language and the line count and numbers the lines from 1. What it shows is what
runs: every control character is drawn visibly (ESC as ``^[``, C1 as ``<U+009B>``), bidi and
zero-width characters are drawn as ``<U+202E>`` and named in a warning line above the code,
and long lines wrap (a line of more than a few screen rows keeps its start and end with the
number of characters cut between; ``v`` shows it whole). A block taller than the terminal
shows its head and tail with "N more lines" between, so the question below it is always on
screen; the answer ``v`` shows the whole block in a pager.

:func:`block_body` (the numbered, wrapped, head-and-tail lines) and :func:`view_warnings`
are the pieces another view of a block (a patch's diff) can reuse.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lmc.messages.sanitize import controls_in, for_terminal, invisible_in

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = ["RESERVED_ROWS", "block_body", "confirm_view", "shown_rows", "view_warnings"]

#: Rows kept free below the view: the panel's borders, the question and a line of slack.
RESERVED_ROWS = 5

_LEXERS = {
    "python": "python",
    "shell": "bash",
    "javascript": "javascript",
    "r": "r",
    "applescript": "applescript",
    "html": "html",
}
_CUT_STYLE = "bold black on yellow"


def shown_rows(lines: int, height: int) -> tuple[int, int, int]:
    """(head, hidden, tail) line counts for ``lines`` one-row lines on a ``height``-row
    terminal."""
    room = max(height - RESERVED_ROWS, 3)
    if lines <= room:
        return lines, 0, 0
    head = (room - 1) // 2
    tail = room - 1 - head
    return head, lines - head - tail, tail


def view_warnings(code: str, cut: list[int] | None = None) -> list[str]:
    """Warning lines for what in ``code`` would read differently from how it runs."""
    warnings = []
    hidden = invisible_in(code)
    if hidden:
        names = ", ".join(hidden)
        warnings.append(
            f"⚠ invisible characters that change how the code reads ({names}) are shown as <U+…>"
        )
    controls = controls_in(code)
    if controls:
        noun = "character" if controls == 1 else "characters"
        warnings.append(f"⚠ {controls} control {noun} shown as ^X or <U+…> (ESC is ^[)")
    if cut:
        named = ", ".join(str(number) for number in cut[:5]) + (" …" if len(cut) > 5 else "")
        warnings.append(f"⚠ long line {named}: its middle is cut here (v shows it whole)")
    return warnings


@dataclass(frozen=True, slots=True)
class _Fitted:
    lines: list[str]  # the lines as shown (sanitized, overlong ones cut in the middle)
    cut: list[int]  # line numbers cut in the middle
    marks: list[tuple[int, int, int]]  # (line, start, end) of each cut mark


def _fit_lines(lines: list[str], measure: Console, avail: int, max_rows: int) -> _Fitted:
    """Cut the middle out of each line that would take more than ``max_rows`` rows."""
    from rich.text import Text

    shown, cut, marks = [], [], []
    keep = max(avail * max_rows // 2 - 20, 8)
    for number, line in enumerate(lines, 1):
        if len(line) > 2 * keep and len(Text(line).wrap(measure, avail)) > max_rows:
            mark = f" ⟪{len(line) - 2 * keep:,} characters cut⟫ "
            marks.append((number, keep, keep + len(mark)))
            line = line[:keep] + mark + line[-keep:]
            cut.append(number)
        shown.append(line)
    return _Fitted(shown, cut, marks)


def _rows(measure: Console, line: str, avail: int) -> int:
    from rich.text import Text

    return max(len(Text(line).wrap(measure, avail)), 1)


def _head_tail(lines: list[str], measure: Console, avail: int, room: int) -> tuple[int, int]:
    """How many lines from the top and from the bottom fit in ``room`` rows (all: (n, 0))."""
    total = 0
    for line in lines:
        total += _rows(measure, line, avail)
        if total > room:
            break
    else:
        return len(lines), 0
    budget = room - 1  # a row for the "more lines" note
    head = used = 0
    while head < len(lines) and used + _rows(measure, lines[head], avail) <= budget // 2:
        used += _rows(measure, lines[head], avail)
        head += 1
    tail = 0
    while tail < len(lines) - head - 1:
        rows = _rows(measure, lines[-1 - tail], avail)
        if used + rows > budget:
            break
        used += rows
        tail += 1
    return head, tail


def block_body(
    language: str, code: str, *, height: int, width: int, tool: bool = False, reserved: int = 0
) -> tuple[RenderableType, list[str]]:
    """The block's numbered lines fitted to the terminal, and the warnings to show above them.

    ``code`` is sanitized here; ``reserved`` rows are kept for what the caller adds.
    """
    from rich.console import Console, Group
    from rich.syntax import Syntax
    from rich.text import Text

    lines = for_terminal(code.rstrip("\n")).split("\n") if code.strip("\n") else []
    count = len(lines)
    avail = max(width - 4 - (len(str(count)) + 3), 10)
    measure = Console(file=io.StringIO(), width=max(avail, 10), color_system=None)
    room = max(height - RESERVED_ROWS - reserved, 3)
    fitted = _fit_lines(lines, measure, avail, max(room // 4, 2))
    warnings = view_warnings(code, fitted.cut)
    room = max(room - sum(_rows(measure, line, width - 4) for line in warnings), 3)
    body = "\n".join(fitted.lines)
    lexer = _LEXERS.get(language, "json" if tool else "text")

    def part(first: int, last: int) -> Syntax:
        syntax = Syntax(
            body,
            lexer,
            theme="monokai",
            line_numbers=True,
            line_range=(first, last),
            word_wrap=True,
            background_color="default",
        )
        for number, start, end in fitted.marks:
            syntax.stylize_range(_CUT_STYLE, (number, start), (number, end))
        return syntax

    head, tail = _head_tail(fitted.lines, measure, avail, room)
    if not tail:
        return part(1, max(count, 1)), warnings
    hidden = count - head - tail
    noun = "line" if hidden == 1 else "lines"
    note = Text(f"   … {hidden} more {noun} (v shows them all) …", style="yellow")
    parts: list[RenderableType] = [part(1, head)] if head else []
    parts += [note, part(count - tail + 1, count)]
    return Group(*parts), warnings


def confirm_view(
    language: str, code: str, height: int, *, tool: bool = False, width: int = 80
) -> RenderableType:
    """The panel shown above the question for ``code`` in ``language``."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    body, warnings = block_body(language, code, height=height, width=width, tool=tool)
    stripped = code.rstrip("\n")
    count = stripped.count("\n") + 1 if stripped else 0
    noun = "line" if count == 1 else "lines"
    title = f"{for_terminal(language) or 'code'} · {count} {noun}"
    view: RenderableType = body
    if warnings:
        view = Group(*(Text(line, style="bold yellow") for line in warnings), body)
    return Panel(view, title=title, title_align="left", border_style="blue")
