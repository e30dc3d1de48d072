"""MCP tool calls (LMC ``tool_call`` chunks) in the terminal: rich, plain, the question, export."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from rich.console import Console
from support.seed_chunks import strip_ansi

from lmc.messages import (
    Chunk,
    Message,
    MessageAssembler,
    ToolCallBlock,
    ToolCallChunk,
    confirmation_chunk,
    validate_message,
)
from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.confirm import Confirmer, question_for
from lmc.terminal.export import notebook_text, to_markdown
from lmc.terminal.plain import PlainRenderer
from lmc.terminal.rich_renderer import RichRenderer

ARGS = '{"query": "open bugs", "limit": 3}'
PNG = base64.b64encode(
    base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    )
).decode()


BLOCK: ToolCallBlock = {"type": "tool_call", "format": "issues.search", "content": ARGS}


def _call(*, image: bool = False) -> list[Chunk]:
    base: ToolCallChunk = {"role": "assistant", "type": "tool_call", "format": "issues.search"}
    chunks: list[Chunk] = [
        {**base, "start": True},
        {**base, "content": ARGS[:10]},
        {**base, "content": ARGS[10:]},
        {**base, "end": True},
        confirmation_chunk(BLOCK),
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "output", "content": "#12 crash\n"},
    ]
    if image:
        chunks.append({"role": "computer", "type": "image", "format": "base64.png", "content": PNG})
    chunks += [
        {"role": "computer", "type": "console", "end": True},
        {"role": "assistant", "type": "message", "content": "One open bug."},
    ]
    return chunks


def _messages(chunks: list[Chunk]) -> list[Message]:
    assembler = MessageAssembler([{"role": "user", "type": "message", "content": "bugs?"}])
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.messages


def test_tool_call_chunks_and_their_confirmation_are_valid_lmc() -> None:
    messages = _messages(_call())
    assert messages[1] == {
        "role": "assistant",
        "type": "tool_call",
        "format": "issues.search",
        "content": ARGS,
    }
    assert all(validate_message(m) == m for m in messages)


def test_plain_shows_the_call_like_code_then_its_result() -> None:
    out = io.StringIO()
    renderer = PlainRenderer(out)
    for chunk in _call():
        renderer.feed(chunk)
    renderer.close()
    assert out.getvalue() == f"```issues.search\n{ARGS}\n```\n#12 crash\nOne open bug.\n\n"


def test_rich_shows_the_call_in_a_panel_titled_server_tool(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, height=40, color_system="256")
    renderer = RichRenderer(console, artifacts=ArtifactStore(tmp_path))
    for chunk in _call(image=True):
        renderer.feed(chunk)
    renderer.close()
    text = strip_ansi(out.getvalue())
    call_at = text.rindex("╭─ issues.search")
    assert '"open bugs"' in text[call_at:]
    assert text.index("#12 crash", call_at) < text.index("One open bug.", call_at)
    assert "saved to" in text[call_at:]  # the image


def _asker(*answers: str) -> tuple[list[str], Callable[[str], str]]:
    asked: list[str] = []
    replies: Iterator[str] = iter(answers)

    def ask(question: str) -> str:
        asked.append(question)
        return next(replies)

    return asked, ask


def test_the_question_names_a_tool_and_edit_opens_json() -> None:
    asked, ask = _asker("y", "e")
    edits: list[tuple[str, str]] = []

    def edit(language: str, code: str) -> str:
        edits.append((language, code))
        return '{"query": "all bugs"}'

    confirmer = Confirmer(auto_run=False, ask=ask, say=lambda text: None, edit=edit)
    block = BLOCK
    assert confirmer(block) is True
    assert confirmer(confirmation_chunk(BLOCK)) == ('{"query": "all bugs"}')
    assert asked == [question_for(block)] * 2
    assert asked[0].startswith("Call this tool?")
    assert edits == [("issues.search", ARGS)]


def test_edit_in_the_editor_uses_a_json_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmc.terminal.confirm import edit_in_editor

    script = tmp_path / "editor.sh"
    script.write_text('#!/bin/sh\necho "$1" > ' + str(tmp_path / "name") + "\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    edit_in_editor("issues.search", ARGS)
    assert (tmp_path / "name").read_text().strip().endswith("code.json")


def test_export_markdown_and_notebook() -> None:
    messages = _messages(_call(image=True))
    markdown = to_markdown(messages)
    assert (
        f"**Tool call** `issues.search`\n\n```json\n{ARGS}\n```\n\n```text\n#12 crash\n```\n\n"
        f"![image](data:image/png;base64,{PNG})\n"
    ) in markdown
    notebook = nbformat.reads(notebook_text(messages), as_version=4)
    nbformat.validate(notebook)
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds == ["markdown", "markdown", "markdown"]
    assert notebook.cells[1].source == (
        f"**Tool call** `issues.search`\n\n```json\n{ARGS}\n```\n\n```text\n#12 crash\n```\n\n"
        f"![image](data:image/png;base64,{PNG})\n"
    )
    assert json.loads(notebook_text(messages))["nbformat"] == 4
