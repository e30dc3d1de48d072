"""Jupyter's wire protocol as lmc speaks it to its kernels (lmc/computer/kernel_wire.py):
signed both ways, a forged or malformed message dropped, and no jupyter_client in lmc's
process when a block runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lmc.computer.kernel_wire import DELIMITER, Session

ROOT = Path(__file__).resolve().parents[2]


def test_a_message_round_trips_signed() -> None:
    session = Session(b"secret", "hmac-sha256")
    message = session.msg("execute_request", {"code": "print(1)"})
    frames = [b"identity", *session.serialize(message)]
    back = session.deserialize(frames)
    assert back is not None
    assert (back["msg_type"], back["content"]) == ("execute_request", {"code": "print(1)"})
    assert back["header"]["session"] == session.session and back["buffers"] == []


def test_a_forged_or_malformed_message_is_dropped() -> None:
    session = Session(b"secret", "hmac-sha256")
    frames = session.serialize(session.msg("status", {"execution_state": "idle"}))
    forged = Session(b"other key", "hmac-sha256").serialize(
        session.msg("status", {"execution_state": "idle"})
    )
    assert session.deserialize(forged) is None
    tampered = [*frames[:5], b'{"execution_state": "busy"}']
    assert session.deserialize(tampered) is None
    assert session.deserialize([b"no delimiter"]) is None
    assert session.deserialize([DELIMITER, frames[1]]) is None
    assert session.deserialize(frames) is not None  # the untouched one still reads


BLOCK = """
import sys
from lmc.computer import Computer
with Computer() as computer:
    out = list(computer.run("python", "print(6 * 7)"))
    out += list(computer.run("shell", "echo $((6 * 7))"))
print([c["content"] for c in out if c.get("format") == "output"])
print(sorted(m for m in ("jupyter_client", "tornado", "traitlets") if m in sys.modules))
"""


def test_a_block_runs_without_jupyter_client_in_lmcs_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCK],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outputs, loaded = done.stdout.strip().splitlines()[-2:]
    assert outputs == "['42\\n', '42\\n']"
    assert loaded == "[]"
