"""Conversations are never lost: a process killed with SIGKILL leaves its completed messages."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from support.agent_testing import MakeInterpreter
from support.replay import write_replay

from lmc.agent.storage import ConversationStore
from lmc.messages import Chunk, text_of

ROOT = Path(__file__).resolve().parents[2]
FINAL = "<|channel|>final<|message|>{}<|return|>"

CHILD = """
import json, sys
from lmc.agent import Interpreter

model, replay, db = sys.argv[1:4]
interpreter = Interpreter(model=model, replay=replay, db_path=db, auto_run=True)
for chunk in interpreter.chat("please work", stream=True, display=False):
    print(json.dumps(chunk), flush=True)
"""


def python_call(code: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{code}<|call|>"


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (kernels run in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def run_and_kill(
    tmp_path: Path, tiny_model: Path, completions: list[str], kill_when: Callable[[Chunk], bool]
) -> Path:
    """Run a chat in a child process and SIGKILL it (and its kernels) at ``kill_when``."""
    replay = write_replay(tmp_path / "child-replay.txt", completions)
    db = tmp_path / "killed.db"
    # SIGKILL leaves the kernels' connection files and temp dirs behind: in a private TMPDIR
    # (short: kernels' socket paths must fit in 108 bytes), removed after the test.
    tmpdir = Path(tempfile.mkdtemp(prefix="lmc-t-", dir="/tmp"))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "TMPDIR": str(tmpdir),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tiny_model), str(replay), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
        text=True,
    )
    assert child.stdout is not None
    deadline = time.monotonic() + 120
    try:
        for line in child.stdout:
            if kill_when(json.loads(line)):
                break
            assert time.monotonic() < deadline
        else:
            raise AssertionError("the child finished before the moment to kill it")
    finally:
        below = descendants(child.pid)
        os.killpg(child.pid, signal.SIGKILL)
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        child.wait(10)
        shutil.rmtree(tmpdir, ignore_errors=True)
    assert child.returncode == -signal.SIGKILL
    return db


def test_killed_mid_generation_keeps_every_completed_message(
    tmp_path: Path, tiny_model: Path, make_interpreter: MakeInterpreter
) -> None:
    db = run_and_kill(
        tmp_path,
        tiny_model,
        [python_call("print('step one')"), FINAL.format("word " * 3000)],
        lambda chunk: chunk["type"] == "message" and "content" in chunk,
    )
    with ConversationStore(db) as store:
        [info] = store.list_conversations()
        messages = store.load(info.id)
    assert [(m["role"], m["type"]) for m in messages] == [
        ("user", "message"),
        ("assistant", "code"),
        ("computer", "console"),
    ]
    assert text_of(messages[2]).strip() == "step one"

    resumed, backend = make_interpreter(
        [FINAL.format("Back.")], conversation_id=info.id, db_path=db
    )
    assert resumed.chat("are you there?", display=False)[-1]["content"] == "Back."
    assert "step one" in backend.prompts[0]


def test_killed_mid_execution_keeps_the_call_and_resumes_consistently(
    tmp_path: Path, tiny_model: Path, make_interpreter: MakeInterpreter
) -> None:
    db = run_and_kill(
        tmp_path,
        tiny_model,
        [python_call("print('started', flush=True)\nimport time\ntime.sleep(60)")],
        lambda chunk: chunk.get("format") == "output" and "started" in text_of(chunk),
    )
    with ConversationStore(db) as store:
        [info] = store.list_conversations()
        messages = store.load(info.id)
    assert [(m["role"], m["type"]) for m in messages] == [
        ("user", "message"),
        ("assistant", "code"),
    ]

    resumed, backend = make_interpreter(
        [FINAL.format("Resumed.")], conversation_id=info.id, db_path=db
    )
    assert text_of(resumed.messages[-2]).startswith("The run was cut off")
    assert "the python kernel is fresh" in text_of(resumed.messages[-1])  # told, resumed
    assert resumed.chat("what happened?", display=False)[-1]["content"] == "Resumed."
    assert (
        "time.sleep(60)<|call|><|start|>python to=assistant<|channel|>analysis<|message|>"
        "The run was cut off: lmc stopped before it finished.<|end|><|start|>developer"
    ) in backend.prompts[0]
