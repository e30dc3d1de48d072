"""Jobs through ``lmc run --json -y`` (tiny model replaying the calls, real shell kernel in the
real sandbox): the block handed back comes out as a typed ``job`` chunk, the model's line
reaches the program's ``read``, and ``eof`` ends a ``cat``; nothing is left running."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.processes import pids_of
from support.replay import write_replay

ROOT = Path(__file__).resolve().parents[2]


def _shell(code: str) -> str:
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


def _jobs(**arguments: Any) -> str:
    text = json.dumps(arguments)
    return f"<|channel|>commentary to=functions.jobs <|constrain|>json<|message|>{text}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def _outputs(chunks: list[dict[str, Any]]) -> list[str]:
    runs: list[str] = []
    for chunk in chunks:
        if chunk.get("type") == "console" and chunk.get("start"):
            runs.append("")
        elif chunk.get("format") == "output":
            runs[-1] += str(chunk.get("content") or "")
    return runs


def test_a_job_is_answered_and_ended_through_lmc_run_json(
    tmp_path: Path, lmc_env: dict[str, str], tiny_model: Path
) -> None:
    marker = f"marker-{secrets.token_hex(6)}"
    cat = ("cat", "-", marker)
    waits = "while [ ! -e go ]; do sleep 0.05; done; "
    replay = write_replay(
        tmp_path / "replay.txt",
        [
            _shell(f"touch {marker}; {waits}read a; echo got:$a; cat - {marker}"),
            _jobs(action="write", job=1, text="yes"),
            _shell("touch go"),
            _jobs(action="eof", job=1, wait=60),
            _final("It said yes."),
        ],
    )
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "lmc", "run", "--json", "-y", "--block-timeout", "1"]
    done = subprocess.run(
        [*command, "-m", str(tiny_model), "--replay", str(replay), "answer it"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    chunks = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    [typed] = [chunk for chunk in chunks if chunk.get("type") == "job"]
    assert typed["format"] == "handed_back"
    assert typed["content"]["job"] == 1 and typed["content"]["input"] is True
    started, written, touched, ended = _outputs(chunks)
    assert "goes on in the background as job 1" in started
    assert written.startswith("job 1: 4 bytes sent"), written
    assert touched == ""
    assert ended.startswith("job 1: its input is closed (end of input); it is finished"), ended
    assert "got:yes" in written + ended
    assert not pids_of(*cat)
