"""SIGTERM, SIGHUP and SIGINT to a real ``lmc run`` whose code left a background ``sleep``.

The test drives ``python -m lmc run`` (tiny model + replay) as a child process, waits until
the shell kernel has printed that the ``sleep`` started, sends the signal, and then checks
from outside: lmc exited with 128 + N, the ``sleep`` is gone, no kernel connection file or
shell temp dir is left in the child's TMPDIR, the conversation is stored as far as it went,
and the ``--json`` stream ended the message the signal cut.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.replay import write_replay

from lmc.agent.storage import ConversationStore

ROOT = Path(__file__).resolve().parents[2]


def _shell_call(script: str) -> str:
    arguments = json.dumps({"code": script})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"]
)
def test_a_signal_ends_the_kernels_children_and_files_and_keeps_the_conversation(
    signum: int, lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pid_file = tmp_path / "sleep.pid"
    script = f"sleep 1000 &\necho $! > {pid_file}\necho started\nwait"
    replay = write_replay(
        tmp_path / "replay.txt",
        [_shell_call(script), "<|channel|>final<|message|>Never reached.<|return|>"],
    )
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "lmc", "run", "--json", "-y", "-m", str(tiny_model)]
    child = subprocess.Popen(
        [*command, "--replay", str(replay), "sleep in the background"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    sleep_pid = None
    lines: list[str] = []
    try:
        for line in child.stdout:
            lines.append(line)
            chunk = json.loads(line)
            if chunk.get("format") == "output" and "started" in chunk.get("content", ""):
                break
        else:
            raise AssertionError(f"lmc ended before the code ran: {child.stderr.read()}")
        sleep_pid = int(pid_file.read_text())
        assert _alive(sleep_pid)
        child.send_signal(signum)
        rest, errors = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
        if sleep_pid is not None and _alive(sleep_pid):
            os.kill(sleep_pid, signal.SIGKILL)
    lines += rest.splitlines(keepends=True)

    assert child.returncode == 128 + signum, errors
    assert "Traceback" not in errors and "bug" not in errors
    assert sleep_pid is not None and _wait_gone(sleep_pid), "the background sleep survived"
    assert sorted(p.name for p in tmp.iterdir()) == []  # no lmc-kernels-*, no lmc-shell-*

    chunks = [json.loads(line) for line in lines]
    assert chunks[-1].get("end") is True  # the message the signal cut is ended
    assert (chunks[-1]["role"], chunks[-1]["type"]) == ("computer", "console")

    with ConversationStore(Path(lmc_env["LMC_DATA_DIR"]) / "conversations.db") as store:
        [conversation] = store.list_conversations()
        messages = store.load(conversation.id)
    assert messages[0] == {"role": "user", "type": "message", "content": "sleep in the background"}
    assert any(m["type"] == "code" and "sleep 1000 &" in m["content"] for m in messages)
    output = "".join(m["content"] for m in messages if m.get("format") == "output")
    assert "started" in output and "[interrupted]" in output
