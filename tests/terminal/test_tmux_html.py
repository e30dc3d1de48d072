"""The html tool with a person at the terminal: tmux runs ``lmc`` (tiny model + replay) and
``BROWSER`` is a script that records what it was asked to open."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from support.replay import write_replay
from support.tmux_testing import Pane

ROOT = Path(__file__).resolve().parents[2]
HTML_TOOL = (
    "<|channel|>commentary to=functions.html <|constrain|>json"
    '<|message|>{"code": "<h1>report</h1>"}<|call|>'
)
FINAL = "<|channel|>final<|message|>There it is.<|return|>"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.opened = tmp_path / "opened.txt"
        self.data = tmp_path / "data" / "lmc"
        self.pane = Pane(f"lmc-html-{os.getpid()}-{tmp_path.name}", "term")

    def start(self, tiny_model: Path, *args: str, **env: str) -> Pane:
        browser = self.tmp_path / "browser.sh"
        browser.write_text(f'#!/bin/sh\necho "$1" >> {self.opened}\n')
        browser.chmod(0o755)
        replay = write_replay(self.tmp_path / "r.txt", [HTML_TOOL, FINAL])
        variables = {
            "PYTHONPATH": str(ROOT),
            "XDG_CONFIG_HOME": str(self.tmp_path / "config"),
            "LMC_DATA_DIR": str(self.data),
            "TERM": "xterm-256color",
            "BROWSER": str(browser),
            **env,
        }
        command = " ".join(
            [
                "env -u DISPLAY -u WAYLAND_DISPLAY",
                *(f"{k}={shlex.quote(v)}" for k, v in variables.items()),
                shlex.quote(sys.executable),
                "-m lmc",
                *(shlex.quote(a) for a in args),
                "--model",
                shlex.quote(str(tiny_model)),
                "--replay",
                shlex.quote(str(replay)),
                "; echo LMC-EXITED rc=$?; sleep 60",
            ]
        )
        self.pane.tmux("new-session", "-d", "-s", "term", "-x", "150", "-y", "50", command)
        return self.pane

    def opened_document(self) -> Path:
        [url] = self.opened.read_text().split()
        parsed = urlparse(url)
        assert parsed.scheme == "file"
        return Path(unquote(parsed.path))


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.pane.tmux("kill-server")


def test_run_in_a_terminal_opens_the_html_in_the_browser(
    terminal: Terminal, tiny_model: Path
) -> None:
    pane = terminal.start(tiny_model, "run", "-y", "--network", "show me")
    screen = pane.wait_for(r"LMC-EXITED rc=\d+", timeout=90)
    assert "LMC-EXITED rc=0" in screen
    assert "There it is." in screen and "opened in your browser" in screen
    document = terminal.opened_document()
    assert document.parent == terminal.data / "outputs"
    assert document.read_text().endswith("<h1>report</h1>")


def test_with_the_network_off_the_html_is_saved_not_opened(
    terminal: Terminal, tiny_model: Path
) -> None:
    """The person's browser has the network the code has not: a document the code wrote
    would carry data out (an image or a refresh to any address), so it is only saved."""
    pane = terminal.start(tiny_model, "run", "-y", "show me")
    screen = pane.wait_for(r"LMC-EXITED rc=\d+", timeout=90)
    assert "LMC-EXITED rc=0" in screen and "There it is." in screen
    assert "HTML saved to" in screen and "opened in your browser" not in screen
    assert not terminal.opened.exists()
    [document] = (terminal.data / "outputs").glob("*.html")
    saved = document.read_text()  # the page starts with the sandbox's CSP, then the document
    assert saved.startswith('<meta http-equiv="Content-Security-Policy"')
    assert saved.endswith("><h1>report</h1>")


def test_plain_chat_greets_once_and_opens_the_html(terminal: Terminal, tiny_model: Path) -> None:
    pane = terminal.start(tiny_model, "-y", "--network", NO_COLOR="1")
    screen = pane.wait_for(r"^>\s*$", timeout=90)
    assert "lmc: type a message" in screen and "lmc: lmc:" not in screen
    pane.type_line("show me")
    pane.wait_for("There it is.", timeout=60)
    pane.wait_for(r"^>\s*$", after=pane.screen().index("There it is."))
    assert "and opened in your browser]" in pane.screen()
    assert terminal.opened_document().read_text().endswith("<h1>report</h1>")
    pane.send("C-d")
    pane.wait_for("LMC-EXITED rc=0", timeout=60)
    # What the person typed is theirs alone.
    assert stat.S_IMODE((terminal.data / "prompt_history").stat().st_mode) == 0o600
    assert stat.S_IMODE(terminal.data.stat().st_mode) == 0o700
