"""An MCP tool call in a real terminal: tmux runs ``lmc`` with the toy MCP server configured
(tiny model + replay); the person declines one call, edits another's arguments, and the
result shows in the panel titled SERVER.TOOL."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.mcp_servers import toy_stdio
from support.processes import descendants, wait_gone
from support.tmux_testing import Pane, start_chat

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _call(note: str) -> str:
    return (
        "<|channel|>commentary to=functions.toy__remember <|constrain|>json<|message|>"
        + json.dumps({"note": note})
        + "<|call|>"
    )


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


@pytest.fixture
def chat(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Pane, Path]]:
    config = tmp_path / "config" / "lmc" / "config.toml"
    config.parent.mkdir(parents=True)
    table = toy_stdio()
    config.write_text(
        "[mcp.servers.toy]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    )
    # The editor replaces the arguments with {"note": "edited"}.
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf \'{"note": "edited"}\' > "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))  # the new tmux server, and so lmc, inherit it
    monkeypatch.delenv("VISUAL", raising=False)
    pane, work = start_chat(
        tiny_model,
        tmp_path,
        [_call("first"), final("You declined."), _call("second"), final("Noted.")],
    )
    shell = int(pane.tmux("display-message", "-p", "#{pane_pid}") or 0)
    lmc: set[int] = set()
    try:
        yield pane, work
    finally:
        lmc = {
            pid
            for pid in descendants(shell)
            if b"\0-m\0lmc\0" in Path(f"/proc/{pid}/cmdline").read_bytes()
        }
        pane.tmux("kill-server")
    # Closing the terminal (SIGHUP) at the prompt ends lmc itself, MCP servers and all.
    assert len(lmc) == 1, "lmc was not found in the terminal"
    assert wait_gone(lmc, timeout=60) == set(), "lmc did not exit after SIGHUP"


def test_a_tool_call_is_asked_about_declined_and_edited(chat: tuple[Pane, Path]) -> None:
    pane, _ = chat
    pane.wait_for(r"^>\s*$", timeout=60)
    pane.type_line("remember something")
    screen = pane.wait_for(r"Call this tool\? \[y\]es \[n\]o \[e\]dit \[a\]lways", timeout=120)
    assert "╭─ toy.remember" in screen and '"note": "first"' in screen
    mark = pane.mark()
    pane.type_line("n")
    pane.wait_for(r"Why not\?", after=mark)
    pane.type_line("")
    pane.wait_for("You declined.", after=mark)
    assert "The user declined this tool call." in pane.screen()[mark:]

    pane.wait_for(r"^>\s*$", after=mark)
    mark = pane.mark()
    pane.type_line("try again")
    pane.wait_for(r"Call this tool\?", after=mark)
    pane.type_line("e")
    pane.wait_for("Noted.", after=mark, timeout=60)
    assert "remembered 1 note(s): edited" in pane.screen()[mark:]
