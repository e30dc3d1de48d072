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
from pathlib import Path

import pytest
from support.processes import pids_of, unique_seconds, wait_until_gone, wait_until_running
from support.replay import write_replay

from lmc.agent.storage import ConversationStore
from lmc.messages import text_of

ROOT = Path(__file__).resolve().parents[2]


def _shell_call(script: str) -> str:
    arguments = json.dumps({"code": script})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


@pytest.mark.parametrize(
    ("signum", "started_ignoring_int"),
    [
        (signal.SIGTERM, False),
        (signal.SIGHUP, False),
        (signal.SIGINT, False),
        # `lmc run ... &` in a script: the shell starts it with SIGINT ignored.
        (signal.SIGINT, True),
    ],
    ids=["TERM", "HUP", "INT", "INT-started-ignored"],
)
def test_a_signal_ends_the_kernels_children_and_files_and_keeps_the_conversation(
    signum: int,
    started_ignoring_int: bool,
    lmc_env: dict[str, str],
    tiny_model: Path,
    tmp_path: Path,
    short_tmpdir: Path,
) -> None:
    background = ("sleep", unique_seconds(1000))
    foreground = ("sleep", unique_seconds(999))
    script = f"{' '.join(background)} &\necho started\n{' '.join(foreground)}"
    replay = write_replay(
        tmp_path / "replay.txt",
        [_shell_call(script), "<|channel|>final<|message|>Never reached.<|return|>"],
    )
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "TMPDIR": str(short_tmpdir)}
    command = [sys.executable, "-m", "lmc", "run", "--json", "-y", "-m", str(tiny_model)]
    if started_ignoring_int:
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
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
    lines: list[str] = []
    try:
        for line in child.stdout:
            lines.append(line)
            chunk = json.loads(line)
            if chunk.get("format") == "output" and "started" in chunk.get("content", ""):
                break
        else:
            raise AssertionError(f"lmc ended before the code ran: {child.stderr.read()}")
        assert wait_until_running(*background), "the background sleep did not start"
        child.send_signal(signum)
        rest, errors = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
        gone = wait_until_gone(*background) and wait_until_gone(*foreground)
        for pid in pids_of(*background) + pids_of(*foreground):
            os.kill(pid, signal.SIGKILL)
    lines += rest.splitlines(keepends=True)

    assert child.returncode == 128 + signum, errors
    assert "Traceback" not in errors and "bug" not in errors
    assert gone, "the code's sleeps survived lmc"
    assert sorted(p.name for p in short_tmpdir.iterdir()) == []  # no lmc-kernels-*, lmc-shell-*

    chunks = [json.loads(line) for line in lines]
    assert chunks[-1].get("end") is True  # the message the signal cut is ended
    assert (chunks[-1]["role"], chunks[-1]["type"]) == ("computer", "console")

    with ConversationStore(Path(lmc_env["LMC_DATA_DIR"]) / "conversations.db") as store:
        [conversation] = store.list_conversations()
        messages = store.load(conversation.id)
    assert messages[0] == {"role": "user", "type": "message", "content": "sleep in the background"}
    assert any(m["type"] == "code" and "echo started" in m["content"] for m in messages)
    output = "".join(text_of(m) for m in messages if m.get("format") == "output")
    assert "started" in output and "[interrupted]" in output
