"""The loop guard end to end through ``lmc run --json -y`` (tiny model replaying the calls,
real shell kernel): the third identical run (same language, same code up to whitespace, same
output) tells the model, the fourth ends the turn and ``lmc run`` exits with status 4.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.replay import write_replay

from lmc.agent.loop_guard import LOOP_STOP

ROOT = Path(__file__).resolve().parents[2]
EXIT_LOOP = 4


def _shell(code: str) -> str:
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def _lmc_run(
    completions: list[str], tmp_path: Path, lmc_env: dict[str, str], tiny_model: Path, tmpdir: Path
) -> tuple[int, list[dict[str, object]], str]:
    replay = write_replay(tmp_path / "replay.txt", completions)
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir)}
    command = [sys.executable, "-m", "lmc", "run", "--json", "-y", "-m", str(tiny_model)]
    done = subprocess.run(
        [*command, "--replay", str(replay), "go"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    chunks = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return done.returncode, chunks, done.stderr


def _messages(chunks: list[dict[str, object]]) -> str:
    return "".join(
        str(c.get("content") or "")
        for c in chunks
        if c.get("role") == "computer" and c.get("type") == "message"
    )


def test_the_fourth_identical_run_ends_the_turn(
    tmp_path: Path, lmc_env: dict[str, str], tiny_model: Path, short_tmpdir: Path
) -> None:
    calls = [_shell("ls  missing-file"), _shell("ls missing-file"), _shell("ls missing-file\n")]
    calls += [_shell(" ls missing-file"), _shell("echo never"), _final("never")]
    status, chunks, errors = _lmc_run(calls, tmp_path, lmc_env, tiny_model, short_tmpdir)
    assert status == EXIT_LOOP, errors
    notes = _messages(chunks)
    assert "has now run 3 times in this turn with the same output" in notes
    assert f"{LOOP_STOP}: it ran the same shell code 4 times" in notes
    assert "never" not in json.dumps(chunks)
    assert "Traceback" not in errors


def test_changing_output_is_no_loop(
    tmp_path: Path, lmc_env: dict[str, str], tiny_model: Path, short_tmpdir: Path
) -> None:
    poll = "echo x >> grows; wc -l < grows"
    calls = [_shell(poll)] * 5 + [_final("done")]
    status, chunks, errors = _lmc_run(calls, tmp_path, lmc_env, tiny_model, short_tmpdir)
    assert status == 0, errors
    assert "repeating" not in _messages(chunks)
