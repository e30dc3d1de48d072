"""Questions on a real terminal (a pty): ask_yes_no for other parts of lmc, and the Python
API's plain renderer, which asks there too and never reads standard input."""

from __future__ import annotations

import io
import os
import select
from collections.abc import Iterator
from typing import TextIO

import pytest

from lmc.agent.approvals import Declined
from lmc.agent.display import PlainRenderer, terminal_stream
from lmc.messages import CodeBlock
from lmc.terminal.question import Terminal, ask_yes_no


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, TextIO]]:
    """(the keyboard's end, the terminal lmc asks on)."""
    master, slave = os.openpty()
    terminal = terminal_stream(slave)
    try:
        yield master, terminal
    finally:
        terminal.close()
        os.close(master)


def _typed(master: int, text: str) -> None:
    os.write(master, text.encode())


def _shown(master: int, expected: str) -> str:
    """What the terminal showed, read until ``expected`` is there (or 10 s without it)."""
    shown = ""
    while expected not in shown:
        ready, _, _ = select.select([master], [], [], 10)
        if not ready:
            break
        shown += os.read(master, 4096).decode()
    return shown


def test_ask_yes_no_on_the_terminal(pty_pair: tuple[int, TextIO]) -> None:
    master, stream = pty_pair
    terminal = Terminal(stream)
    _typed(master, "y\n")
    assert ask_yes_no("Run it again with the network on?", terminal) is True
    expected = "Run it again with the network on? [y/N] "
    assert expected in _shown(master, expected)
    _typed(master, "\n")
    assert ask_yes_no("Again?", terminal) is False  # anything but yes is no


def test_ask_yes_no_without_a_terminal_is_no(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lmc.terminal.question.open_terminal", lambda: None)
    assert ask_yes_no("Run it?") is False


def test_the_api_renderer_asks_on_the_terminal_with_a_reason(
    pty_pair: tuple[int, TextIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, stream = pty_pair
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # never read
    out = io.StringIO()
    renderer = PlainRenderer(out, ask=stream)
    _typed(master, "n it writes outside the project\n")
    block: CodeBlock = {"type": "code", "format": "shell", "content": "rm -rf /"}
    assert renderer.confirm(block) == Declined("it writes outside the project")
    expected = "Run this shell code? [y/N, or n and a reason]"
    assert expected in _shown(master, expected)
    _typed(master, "y\n")
    assert renderer.confirm(block) is True
    assert not stream.closed
