"""The confirm view of an ``apply_patch`` call: the patch as a coloured diff, file by file.

Each file section gets a heading that says what happens to it (added, updated, moved,
deleted); a hunk's ``@@`` anchors, context, removed and added lines follow in the colours of
a diff. Every piece of text is the model's and goes through
:func:`lmc.messages.sanitize.for_terminal`, so an escape sequence or a bidi override in a
patch is drawn, not obeyed. A patch that does not parse is shown as written, under the reason
(it will be refused when applied, and the model told why). A patch taller than the terminal
shows its head and tail, as code does; ``v`` pages the whole of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmc.messages.sanitize import for_terminal
from lmc.terminal.confirm_view import shown_rows
from lmc.workspace.patch import Operation, PatchError, parse_patch

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

__all__ = ["patch_lines", "patch_view"]

_STYLES = {" ": "dim", "-": "red", "+": "green"}


def _heading(op: Operation) -> tuple[str, str]:
    path = for_terminal(op.path)
    if op.kind == "add":
        return f"added {path}", "bold green"
    if op.kind == "delete":
        return f"deleted {path}", "bold red"
    if op.move_to and op.move_to != op.path:
        return f"moved {path} → {for_terminal(op.move_to)}", "bold yellow"
    return f"updated {path}", "bold yellow"


def patch_lines(patch: str) -> tuple[list[tuple[str, str]], int]:
    """The view's lines as (text, rich style), every text safe for the terminal, and how
    many files the patch touches (0 when it does not parse)."""
    try:
        operations = parse_patch(patch)
    except PatchError as exc:
        note = (f"not a valid patch ({for_terminal(str(exc))}); it will be refused", "bold red")
        raw = [(for_terminal(line), "") for line in patch.rstrip("\n").split("\n")]
        return [note, *raw], 0
    out: list[tuple[str, str]] = []
    for op in operations:
        out.append(_heading(op))
        if op.kind == "add":
            out += [(f"+{for_terminal(line)}", "green") for line in op.contents.splitlines()]
        for chunk in op.chunks:
            out += [(f"@@ {for_terminal(anchor)}", "cyan") for anchor in chunk.anchors] or [
                ("@@", "cyan")
            ]
            out += [(marker + for_terminal(text), _STYLES[marker]) for marker, text in chunk.lines]
            if chunk.end_of_file:
                out.append(("*** End of File", "cyan"))
    return out, len(operations)


def _text(lines: list[tuple[str, str]]) -> Text:
    from rich.text import Text

    text = Text(no_wrap=True, overflow="ellipsis")
    for index, (line, style) in enumerate(lines):
        if index:
            text.append("\n")
        text.append(line, style=style)
    return text


def patch_view(patch: str, height: int) -> RenderableType:
    """The panel shown above the question for an apply_patch call."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    lines, files = patch_lines(patch)
    head, hidden, tail = shown_rows(len(lines), height)
    view: RenderableType
    if not hidden:
        view = _text(lines)
    else:
        note = Text(f"   … {hidden} more lines (v shows them all) …", style="yellow")
        view = Group(_text(lines[:head]), note, _text(lines[len(lines) - tail :]))
    noun = "file" if files == 1 else "files"
    return Panel(
        view, title=f"apply_patch · {files} {noun}", title_align="left", border_style="blue"
    )
