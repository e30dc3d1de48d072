"""``%sandbox`` and ``%network``: against a real Interpreter, and in the chat in tmux."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.replay import write_replay
from support.tmux_testing import ROOT, Pane

from lmc import Interpreter
from lmc.computer import Computer
from lmc.errors import ConfigError
from lmc.terminal.confirm import Confirmer
from lmc.terminal.magic import HELP, ChatState, run_magic


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory on a real disk outside the working directory (the sandbox's /tmp is its
    own, so not under /tmp)."""
    directory = Path(tempfile.mkdtemp(prefix="lmc-magic-test-", dir="/var/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _computer(interpreter: Interpreter) -> Computer:
    """The interpreter's own computer (its type is the loop's narrower protocol)."""
    assert isinstance(interpreter.computer, Computer)
    return interpreter.computer


def test_sandbox_and_network_restart_the_kernels_and_tell_the_model(
    tiny_model: Path, tmp_path: Path, outside: Path
) -> None:
    target = outside / "escape.txt"
    replay = write_replay(
        tmp_path / "replay.txt",
        [
            code(f"kept = 41\nopen({str(target)!r}, 'w').write('x')"),
            final("Blocked."),
            code(f"open({str(target)!r}, 'w').write('x')\nprint(kept)"),
            final("Written."),
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    interpreter = Interpreter(
        model=str(tiny_model), replay=replay, db_path=tmp_path / "c.db", auto_run=True,
        sandbox="workspace", workdir=work,
    )  # fmt: skip
    said: list[str] = []
    chat = ChatState(interpreter, Confirmer(auto_run=True, ask=None, say=said.append), said.append)
    try:
        interpreter.chat("write outside", display=False)
        assert not target.exists()
        assert "[blocked by the sandbox]" in str(interpreter.messages[-2]["content"])

        run_magic("%sandbox", chat)
        assert said[-1].startswith("sandbox workspace: code writes in") and "no network" in said[-1]
        run_magic("%network", chat)  # a bare switch shows the state and changes nothing
        assert said[-1] == "network: off" and not _computer(interpreter).sandbox.network
        run_magic("%network on", chat)
        assert _computer(interpreter).sandbox.network
        assert said[-2].startswith("this change restarts the kernels")  # said before it does
        # Every kernel that had started is named (the shell is started ahead of need, first).
        assert "network on" in said[-1]
        assert re.search(r"the (shell, )?python kernels? restarted", said[-1])
        run_magic("%network", chat)
        assert said[-1] == "network: on" and _computer(interpreter).sandbox.network
        run_magic("%network off", chat)  # no kernel ran since: nothing lost
        assert not _computer(interpreter).sandbox.network and "restarted" not in said[-1]
        run_magic("%sandbox off", chat)
        assert _computer(interpreter).sandbox.mode == "off" and said[-1].startswith("sandbox off")
        with pytest.raises(ConfigError, match="off, workspace, read-only"):
            run_magic("%sandbox nonsense", chat)

        interpreter.chat("again", display=False)
        assert target.read_text() == "x"
        told = str(interpreter.messages[-2]["content"])
        # The kernel restarted for the new sandbox, and its saved state came back with it.
        assert "restarted for the new sandbox" in told
        assert "[lmc: python state restored: kept]\n41" in told
        interpreter.reset()  # a fresh computer keeps the chosen sandbox
        assert _computer(interpreter).sandbox.mode == "off"
    finally:
        interpreter.close()
    assert "%sandbox" in HELP and "%network" in HELP


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_chat_switches_work_in_tmux(tiny_model: Path, tmp_path: Path, outside: Path) -> None:
    target = outside / "from-tmux.txt"
    write = code(f"open({str(target)!r}, 'w').write('x')\nprint('wrote it')")
    replay = write_replay(tmp_path / "chat.txt", [write, final("No."), write, final("Yes.")])
    work = tmp_path / "work"
    work.mkdir()
    env = {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "TERM": "xterm-256color",
        "BROWSER": "true",
    }
    command = " ".join([
        "env", *(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.quote(sys.executable),
        "-m", "lmc", "-y", "--model", shlex.quote(str(tiny_model)), "--replay",
        shlex.quote(str(replay)), "; echo LMC-EXITED rc=$?; sleep 60",
    ])  # fmt: skip
    pane = Pane(f"lmc-sandbox-{os.getpid()}-{tmp_path.name}", "chat")
    pane.tmux("new-session", "-d", "-s", "chat", "-x", "150", "-y", "50", "-c", str(work), command)
    try:
        pane.wait_for(r"^>\s*$", timeout=60)
        pane.type_line("write it")
        pane.wait_for(r"\[blocked by the sandbox\][\s\S]*No\.", timeout=60)
        assert not target.exists()
        mark = pane.mark()
        pane.type_line("%sandbox off")
        pane.wait_for(
            r"sandbox off: code runs with your permissions[\s\S]*python(,\s+shell)?\s+kernels?"
            r"\s+restarted",
            after=mark,
        )
        mark = pane.mark()
        pane.type_line("%network on")
        pane.wait_for(r"sandbox off", after=mark)
        mark = pane.mark()
        pane.type_line("try again")
        pane.wait_for(r"wrote it[\s\S]*Yes\.", after=mark, timeout=60)
        assert target.read_text() == "x"
        pane.send("C-d")
        pane.wait_for("LMC-EXITED rc=0")
    finally:
        pane.tmux("kill-server")
