"""The confirm view: the block being asked about, readable at any terminal size.

It names the language and the line count and numbers the lines from 1. A block taller than
the terminal shows its head and tail with "N more lines" between, so the question below it is
always on screen; the answer ``v`` shows the whole block in a pager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["RESERVED_ROWS", "confirm_view", "shown_rows"]

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


def shown_rows(lines: int, height: int) -> tuple[int, int, int]:
    """(head, hidden, tail) line counts for ``lines`` lines on a ``height``-row terminal."""
    room = max(height - RESERVED_ROWS, 3)
    if lines <= room:
        return lines, 0, 0
    head = (room - 1) // 2
    tail = room - 1 - head
    return head, lines - head - tail, tail


def confirm_view(language: str, code: str, height: int, *, tool: bool = False) -> RenderableType:
    """The panel shown above the question for ``code`` in ``language``."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.text import Text

    body = code.rstrip("\n")
    count = body.count("\n") + 1 if body else 0
    lexer = _LEXERS.get(language, "json" if tool else "text")

    def part(first: int, last: int) -> Syntax:
        return Syntax(
            body,
            lexer,
            theme="monokai",
            line_numbers=True,
            line_range=(first, last),
            word_wrap=False,
            background_color="default",
        )

    head, hidden, tail = shown_rows(count, height)
    view: RenderableType
    if not hidden:
        view = part(1, max(count, 1))
    else:
        note = Text(f"   … {hidden} more lines (v shows them all) …", style="yellow")
        view = Group(part(1, head), note, part(count - tail + 1, count))
    noun = "line" if count == 1 else "lines"
    title = f"{language or 'code'} · {count} {noun}"
    return Panel(view, title=title, title_align="left", border_style="blue")
