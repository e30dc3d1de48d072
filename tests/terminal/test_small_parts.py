"""Folding, image protocols and headers, exports."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import nbformat
import pytest

from lmc.messages import Message, messages_from_json
from lmc.terminal.export import export_conversation, to_markdown, to_notebook
from lmc.terminal.fold import fold_output
from lmc.terminal.images import describe_image, detect_protocol, image_size, inline_sequence


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_fold_short_output_is_untouched() -> None:
    folded = fold_output("a\nb\n")
    assert folded.as_text() == "a\nb" and folded.hidden_lines == 0


def test_fold_long_output_keeps_head_and_tail() -> None:
    folded = fold_output("\n".join(str(i) for i in range(1000)), head=3, tail=2)
    assert folded.as_text() == "0\n1\n2\n… 995 more lines hidden …\n998\n999"


def test_fold_clips_giant_lines() -> None:
    folded = fold_output("x" * 10_000)
    assert folded.head.endswith("… (8000 more characters)")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TERM": "xterm-kitty"}, "kitty"),
        ({"TERM": "xterm-256color", "KITTY_WINDOW_ID": "1"}, "kitty"),
        ({"TERM_PROGRAM": "iTerm.app"}, "iterm2"),
        ({"TERM_PROGRAM": "WezTerm"}, "iterm2"),
        ({"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"}, None),
        ({"TERM": "xterm-256color"}, None),
        ({}, None),
    ],
)
def test_detect_protocol(env: dict[str, str], expected: str | None) -> None:
    assert detect_protocol(env) == expected


def test_inline_sequences() -> None:
    data = _png(4, 5)
    iterm = inline_sequence(data, "iterm2")
    assert iterm.startswith(f"\x1b]1337;File=inline=1;size={len(data)};")
    assert base64.b64encode(data).decode() in iterm
    big = bytes(10_000)
    kitty = inline_sequence(big, "kitty")
    parts = kitty.strip().split("\x1b\\")[:-1]
    assert parts[0].startswith("\x1b_Gf=100,a=T,m=1;")
    assert parts[-1].startswith("\x1b_Gm=0;")
    payload = "".join(p.split(";", 1)[1] for p in parts)
    assert base64.b64decode(payload) == big


def test_image_size_and_description() -> None:
    assert image_size(_png(640, 480)) == (640, 480)
    assert image_size(b"not an image") is None
    assert describe_image(_png(640, 480)).startswith("640×480 image")


MESSAGES: list[Message] = [
    {"role": "user", "type": "message", "content": "What's 34/24?"},
    {"role": "assistant", "type": "code", "format": "python", "content": "34 / 24"},
    {"role": "computer", "type": "console", "format": "output", "content": "1.4166666666666667\n"},
    {"role": "assistant", "type": "code", "format": "shell", "content": "echo hi"},
    {"role": "computer", "type": "console", "format": "output", "content": "hi\n"},
    {
        "role": "computer",
        "type": "image",
        "format": "base64.png",
        "content": base64.b64encode(_png(2, 2)).decode(),
    },
    {"role": "assistant", "type": "message", "content": "It is about **1.42**."},
]


def test_notebook_export_is_valid_and_keeps_outputs() -> None:
    notebook = to_notebook(MESSAGES)
    nbformat.validate(notebook)
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds == ["markdown", "code", "code", "markdown"]
    python, shell = notebook.cells[1], notebook.cells[2]
    assert python.source == "34 / 24"
    assert python.outputs[0].text == "1.4166666666666667\n"
    assert shell.source == "%%bash\necho hi"
    assert [o.output_type for o in shell.outputs] == ["stream", "display_data"]
    assert "image/png" in shell.outputs[1].data


def test_markdown_and_json_exports(tmp_path: Path) -> None:
    markdown = to_markdown(MESSAGES)
    assert "## User\n\nWhat's 34/24?" in markdown
    assert "```python\n34 / 24\n```" in markdown
    assert "![image](data:image/png;base64," in markdown
    assert export_conversation(MESSAGES, tmp_path / "c.json") == "json"
    assert messages_from_json((tmp_path / "c.json").read_text()) == MESSAGES
    assert export_conversation(MESSAGES, tmp_path / "c.ipynb") == "ipynb"
    nbformat.validate(nbformat.read(tmp_path / "c.ipynb", as_version=4))
    assert json.loads((tmp_path / "c.ipynb").read_text())["nbformat"] == 4


DECLINED_RUN: list[Message] = [
    {"role": "user", "type": "message", "content": "clean up"},
    {"role": "assistant", "type": "code", "format": "shell", "content": "rm -rf build"},
    {
        "role": "computer",
        "type": "console",
        "format": "output",
        "content": "The user declined to run this code. Their reason: keep build\n",
    },
    {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"},
    {"role": "computer", "type": "console", "format": "output", "content": "1\n"},
]


def test_declined_blocks_export_as_not_run() -> None:
    notebook = to_notebook(DECLINED_RUN)
    nbformat.validate(notebook)
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds == ["markdown", "markdown", "code"]  # the declined block is not runnable
    assert notebook.cells[1].source.startswith("**Not run** (The user declined")
    assert "Their reason: keep build" in notebook.cells[1].source
    assert "rm -rf build" in notebook.cells[1].source
    assert notebook.cells[2].source == "print(1)"
    markdown = to_markdown(DECLINED_RUN)
    assert "**Not run** (The user declined to run this code. Their reason: keep build)" in markdown
