"""The chat in a real terminal: tmux runs ``lmc`` (tiny model + replay + real kernel); the
test types with send-keys and reads the screen with capture-pane. Every wait has a deadline.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.tmux_testing import Pane, start_chat

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def chat(tiny_model: Path, tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    pane, work = start_chat(
        tiny_model,
        tmp_path,
        [
            code("open('made.txt', 'w').write('hello')"),
            final("You declined, so no file was made."),
            code("open('made.txt', 'w').write('hello')\nprint('wrote made.txt')"),
            final("Done: made.txt exists."),
            code("import time\nprint('sleeping', flush=True)\ntime.sleep(30)"),
            final("Got two lines."),
        ],
    )
    try:
        yield pane, work
    finally:
        pane.tmux("kill-server")


def test_chat_confirm_decline_run_interrupt_magic_and_quit(chat: tuple[Pane, Path]) -> None:
    pane, work = chat
    pane.wait_for(r"^>\s*$", timeout=60)

    # Ctrl-C at the prompt clears the line.
    pane.send("-l", "some draft")
    pane.wait_for("some draft")
    pane.send("C-c")
    screen = pane.wait_for(r"^>\s*$")
    assert screen.rstrip().splitlines()[-1] == ">"

    # Decline: the code is shown, nothing runs.
    pane.type_line("make a file")
    pane.wait_for(r"Run this code\?")
    screen = pane.screen()
    assert "╭─ python" in screen and "open('made.txt', 'w').write('hello')" in screen
    mark = pane.mark()
    pane.type_line("n")
    pane.wait_for(r"Why not\?", after=mark)
    pane.type_line("")  # no reason
    pane.wait_for("You declined, so no file was made.", after=mark)
    assert "declined" in pane.screen()[mark:]
    assert not (work / "made.txt").exists()

    # Accept: it runs and the output is shown.
    pane.wait_for(r"^>\s*$", after=mark)
    mark = pane.mark()
    pane.type_line("now really make it")
    pane.wait_for(r"Run this code\?", after=mark)
    pane.type_line("y")
    pane.wait_for("Done: made.txt exists.", after=mark)
    assert "wrote made.txt" in pane.screen()[mark:]
    assert (work / "made.txt").read_text() == "hello"

    # Ctrl-C while code runs returns to the prompt, long before the 30 s sleep ends.
    pane.wait_for(r"^>\s*$", after=mark)
    mark = pane.mark()
    pane.type_line("sleep please")
    pane.wait_for(r"Run this code\?", after=mark)
    pane.type_line("y")
    pane.wait_for("running line 3", after=mark, timeout=30)
    pane.send("C-c")
    pane.wait_for(r"interrupted[\s\S]*^>\s*$", after=mark, timeout=15)
    assert "sleeping" in pane.screen()[mark:]

    # %undo drops the interrupted exchange; %tokens reports the context.
    mark = pane.mark()
    pane.type_line("%undo")
    pane.wait_for(r"undid the last turn: removed 3 messages", after=mark)
    pane.type_line("%tokens")
    # The default context is the tiny model's trained context, with the reason for it.
    pane.wait_for(r"context: \d+ of 16384 tokens used", after=mark)
    pane.wait_for(r"context size: 16,384 tokens: .*trained context", after=mark)

    # Esc-Enter makes a two-line message.
    mark = pane.mark()
    pane.send("-l", "first line")
    pane.send("Escape", "Enter")
    pane.send("-l", "second line")
    pane.send("Enter")
    pane.wait_for("Got two lines.", after=mark)
    pane.wait_for(r"^>\s*$", after=mark)
    pane.type_line("%save saved.json")
    pane.wait_for(r"saved \d+ messages to saved.json", after=mark)
    messages = json.loads((work / "saved.json").read_text())
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert users == ["make a file", "now really make it", "first line\nsecond line"]
    assert not any("time.sleep" in str(m["content"]) for m in messages)

    # %reset empties the conversation; unknown commands show the help.
    mark = pane.mark()
    pane.type_line("%reset")
    pane.wait_for("conversation reset", after=mark)
    pane.type_line("%save empty.json")
    pane.wait_for("saved 0 messages", after=mark)
    pane.type_line("%nonsense")
    pane.wait_for(r"unknown command %nonsense[\s\S]*%auto_run \[on\|off\]", after=mark)

    # Ctrl-D quits cleanly.
    pane.wait_for(r"^>\s*$", after=mark)
    pane.send("C-d")
    pane.wait_for("LMC-EXITED rc=0", timeout=30)


def test_ctrl_c_while_the_model_writes_returns_to_the_prompt_and_keeps_the_partial_answer(
    tiny_model: Path, tmp_path: Path
) -> None:
    # A long answer: the tiny model forced through it takes many seconds, so there is time
    # to press Ctrl-C in the middle of it.
    words = " ".join(f"w{i}" for i in range(12000))
    pane, work = start_chat(tiny_model, tmp_path, [final(words)], "--context", "32768")
    try:
        pane.wait_for(r"^>\s*$", timeout=60)
        mark = pane.mark()
        pane.type_line("write a lot")
        pane.wait_for(r"w200\b", after=mark, timeout=60)
        pane.send("C-c")
        pane.wait_for(r"^>\s*$", after=mark, timeout=15)
        assert "w11999" not in pane.screen()[mark:]

        # The partial answer is kept in the history, and the chat still works.
        pane.type_line("%save saved.json")
        pane.wait_for(r"saved \d+ messages to saved.json", after=mark)
        messages = json.loads((work / "saved.json").read_text())
        answers = [m["content"] for m in messages if m["role"] == "assistant"]
        assert [m["content"] for m in messages if m["role"] == "user"] == ["write a lot"]
        assert len(answers) == 1 and answers[0].startswith("w0 w1 w2")
        assert "w11999" not in answers[0]
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0", timeout=30)
    finally:
        pane.tmux("kill-server")
