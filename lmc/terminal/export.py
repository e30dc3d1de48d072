"""Exporting a conversation (merged LMC messages) as a notebook, Markdown, or LMC JSON.

A code block and the console output and images that follow it become one notebook cell with
its outputs; other languages use the IPython cell magic that runs them (``%%bash``...). An MCP
tool call (``tool_call``) cannot run in a notebook: it becomes a Markdown cell holding the
call's arguments and its result. A block the person declined never ran: it becomes a Markdown
cell marked "not run" (with the reason they gave), never a runnable code cell.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmc.agent.tool_calls import TOOL_DECLINED
from lmc.agent.tools import DECLINED
from lmc.errors import LmcError
from lmc.messages import Message, validate_message

__all__ = [
    "FORMATS",
    "export_conversation",
    "notebook_text",
    "to_lmc_json",
    "to_markdown",
    "to_notebook",
]

FORMATS = ("ipynb", "md", "json")

_CELL_MAGIC = {
    "shell": "%%bash\n",
    "javascript": "%%javascript\n",
    "html": "%%html\n",
    "r": "%%R\n",
    "applescript": "%%script osascript\n",
}
_MIME = {"base64": "image/png", "base64.png": "image/png", "base64.jpeg": "image/jpeg"}
_SPEAKER = {"user": "User", "assistant": "Assistant", "computer": "Computer"}


def _nbformat() -> Any:
    """nbformat, typed loosely (its functions carry no annotations)."""
    import nbformat

    return nbformat


def declined_blocks(messages: Sequence[Message]) -> dict[int, str]:
    """Index of each code block or tool call the person declined -> the refusal's text (the
    output message that follows it says so)."""
    declined: dict[int, str] = {}
    for index, message in enumerate(messages[:-1]):
        after = messages[index + 1]
        text = str(after.get("content", ""))
        if (
            message["role"] == "assistant"
            and message["type"] in ("code", "tool_call")
            and after["role"] == "computer"
            and after.get("format") == "output"
            and text.startswith((DECLINED, TOOL_DECLINED))
        ):
            declined[index] = text.strip()
    return declined


def _not_run_markdown(fmt: object, content: object, refusal: str) -> str:
    return f"**Not run** ({refusal})\n\n```{fmt}\n{str(content).rstrip()}\n```\n"


def to_notebook(messages: Sequence[Message]) -> Any:
    """An ``nbformat`` v4 notebook node of the conversation."""
    nbf = _nbformat().v4

    declined = declined_blocks(messages)
    cells: list[Any] = []
    cell: Any = None  # the code cell that console output and images attach to
    tool: Any = None  # the Markdown cell of a tool call, which its result joins
    for index, message in enumerate(messages):
        kind, fmt, content = message["type"], message.get("format"), message.get("content")
        if index - 1 in declined:
            continue  # the refusal, already in the "not run" cell
        if index in declined:
            cell = tool = None
            cells.append(nbf.new_markdown_cell(_not_run_markdown(fmt, content, declined[index])))
            continue
        if kind == "tool_call":
            cell = None
            tool = nbf.new_markdown_cell(_tool_call_markdown(str(fmt), str(content)))
            cells.append(tool)
            continue
        if tool is not None and message["role"] == "computer" and kind in ("console", "image"):
            tool.source += "\n" + _result_markdown(kind, fmt, content)
            continue
        tool = None
        if kind == "code" and message["role"] == "assistant":
            source = _CELL_MAGIC.get(str(fmt), "") + str(content)
            cell = nbf.new_code_cell(source, execution_count=None)
            cells.append(cell)
        elif kind == "console" and fmt == "output" and cell is not None:
            cell.outputs.append(nbf.new_output("stream", name="stdout", text=str(content)))
        elif kind == "image" and fmt in _MIME and cell is not None:
            cell.outputs.append(
                nbf.new_output("display_data", data={_MIME[str(fmt)]: str(content)})
            )
        elif kind == "message":
            cell = None
            speaker = _SPEAKER[message["role"]]
            cells.append(nbf.new_markdown_cell(f"**{speaker}:**\n\n{content}"))
    notebook = nbf.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return notebook


def _tool_call_markdown(fmt: str, arguments: str) -> str:
    return f"**Tool call** `{fmt}`\n\n```json\n{arguments.strip()}\n```\n"


def _result_markdown(kind: str, fmt: object, content: object) -> str:
    if kind == "image" and fmt in _MIME:
        return f"![image](data:{_MIME[str(fmt)]};base64,{content})\n"
    if kind == "image":
        return f"![image]({content})\n"
    return f"```text\n{str(content).rstrip()}\n```\n"


def notebook_text(messages: Sequence[Message]) -> str:
    """The conversation as ``.ipynb`` JSON text."""
    return str(_nbformat().writes(to_notebook(messages))) + "\n"


def to_markdown(messages: Sequence[Message]) -> str:
    """A readable Markdown transcript (images inline as data URIs)."""
    out: list[str] = []
    declined = declined_blocks(messages)
    for index, message in enumerate(messages):
        kind, fmt, content = message["type"], message.get("format"), message.get("content")
        if index - 1 in declined:
            continue
        if index in declined:
            out.append(_not_run_markdown(fmt, content, declined[index]))
        elif kind == "message":
            out.append(f"## {_SPEAKER[message['role']]}\n\n{str(content).strip()}\n")
        elif kind == "code":
            out.append(f"```{fmt}\n{str(content).rstrip()}\n```\n")
        elif kind == "tool_call":
            out.append(_tool_call_markdown(str(fmt), str(content)))
        elif kind == "console" and fmt == "output":
            out.append(f"```text\n{str(content).rstrip()}\n```\n")
        elif kind == "image" and fmt in _MIME:
            out.append(f"![image](data:{_MIME[str(fmt)]};base64,{content})\n")
        elif kind == "image" and fmt == "path":
            out.append(f"![image]({content})\n")
    return "\n".join(out)


def to_lmc_json(messages: Sequence[Message]) -> str:
    """The messages as an indented JSON list (:func:`lmc.messages.messages_from_json` reads it)."""
    return json.dumps([validate_message(m) for m in messages], ensure_ascii=False, indent=2) + "\n"


def export_conversation(messages: Sequence[Message], path: Path, fmt: str | None = None) -> str:
    """Write the conversation to ``path`` (format from ``fmt`` or the suffix); return the format."""
    chosen = fmt or {".ipynb": "ipynb", ".md": "md", ".markdown": "md"}.get(path.suffix, "json")
    if chosen not in FORMATS:
        raise LmcError(f"unknown export format {chosen!r}", hint=f"use one of {', '.join(FORMATS)}")
    if chosen == "ipynb":
        text = notebook_text(messages)
    elif chosen == "md":
        text = to_markdown(messages)
    else:
        text = to_lmc_json(messages)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LmcError(f"cannot write {path}: {exc}") from exc
    return chosen
