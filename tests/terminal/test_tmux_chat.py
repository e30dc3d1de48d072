"""The chat in a real terminal: tmux runs ``lmc`` (tiny model + replay + real kernel); the
test types with send-keys and reads the screen with capture-pane. Every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.replay import write_replay

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


class Pane:
    """One tmux session on a private server."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket, self.session = socket, session

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.session)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def type_line(self, text: str) -> None:
        self.send("-l", text)
        self.send("Enter")

    def wait_for(self, pattern: str, timeout: float = 30.0, after: int = 0) -> str:
        """Wait until ``pattern`` appears on screen after character ``after``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen[after:], re.MULTILINE):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r}; screen:\n{screen}")
            time.sleep(0.1)

    def mark(self) -> int:
        return len(self.screen().rstrip())


def _start_chat(
    tiny_model: Path, tmp_path: Path, completions: list[str], *flags: str
) -> tuple[Pane, Path]:
    """``lmc`` in a fresh tmux server, replaying ``completions``, in its own work dir."""
    work = tmp_path / "work"
    work.mkdir()
    replay = write_replay(tmp_path / "chat.txt", completions)
    env = {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "TERM": "xterm-256color",
        "BROWSER": "true",
    }
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            "lmc",
            "--model",
            shlex.quote(str(tiny_model)),
            "--replay",
            shlex.quote(str(replay)),
            *flags,
            "; echo LMC-EXITED rc=$?; sleep 60",
        ]
    )
    pane = Pane(f"lmc-test-{os.getpid()}-{tmp_path.name}", "chat")
    pane.tmux("new-session", "-d", "-s", "chat", "-x", "110", "-y", "50", "-c", str(work), command)
    return pane, work


@pytest.fixture
def chat(tiny_model: Path, tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    pane, work = _start_chat(
        tiny_model,
        tmp_path,
        [
            _code("open('made.txt', 'w').write('hello')"),
            _final("You declined, so no file was made."),
            _code("open('made.txt', 'w').write('hello')\nprint('wrote made.txt')"),
            _final("Done: made.txt exists."),
            _code("import time\nprint('sleeping', flush=True)\ntime.sleep(30)"),
            _final("Got two lines."),
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
    started = time.monotonic()
    pane.send("C-c")
    pane.wait_for(r"interrupted[\s\S]*^>\s*$", after=mark, timeout=15)
    assert time.monotonic() - started < 15
    assert "sleeping" in pane.screen()[mark:]

    # %undo drops the interrupted exchange; %tokens reports the context.
    mark = pane.mark()
    pane.type_line("%undo")
    pane.wait_for(r"removed the last exchange", after=mark)
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
    pane, work = _start_chat(tiny_model, tmp_path, [_final(words)], "--context", "32768")
    try:
        pane.wait_for(r"^>\s*$", timeout=60)
        mark = pane.mark()
        pane.type_line("write a lot")
        pane.wait_for(r"w200\b", after=mark, timeout=60)
        started = time.monotonic()
        pane.send("C-c")
        pane.wait_for(r"^>\s*$", after=mark, timeout=15)
        assert time.monotonic() - started < 15
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
