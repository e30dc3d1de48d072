"""The tmux tests leave no sockets behind: tmux keeps a killed server's socket file (and
that of a server whose last session ended), so Pane.kill removes it."""

from __future__ import annotations

import os
import shutil

import pytest
from support.tmux_testing import Pane

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.mark.parametrize("command", ["sleep 60", "true"])
def test_a_killed_server_leaves_no_socket(command: str) -> None:
    pane = Pane(f"lmc-socket-{os.getpid()}-{command.split(maxsplit=1)[0]}")
    try:
        pane.tmux("new-session", "-d", "-s", pane.session, command)
        assert pane.socket_path.exists()  # where tmux put it
    finally:
        pane.kill()
    assert not pane.socket_path.exists()
