"""A kernel can be launched before lmc connects to it: its process boots at once, lmc's side
of the sockets (jupyter_client and zmq in lmc's own process) waits until code is on its way.

``lmc run`` prestarts its kernels this way, so an answer without code costs lmc's process
nothing but the launches (the last test checks that in a process of its own)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lmc.computer.kernel import KernelSession
from lmc.computer.kernelspecs import kernel_spec
from lmc.computer.languages import resolve_language

ROOT = Path(__file__).resolve().parents[2]


def _session(tmp_path: Path, language: str = "python") -> KernelSession:
    resolved = resolve_language(language)
    assert resolved is not None and resolved.kernel is not None
    return KernelSession(kernel_spec(resolved.kernel), runtime_dir=tmp_path)


def _launched(session: KernelSession) -> int:
    """The kernel's pid once its process runs (the launch is in a background thread)."""
    for _ in range(2000):
        if session.pid is not None:
            return session.pid
        time.sleep(0.005)
    raise AssertionError("the kernel was never launched")


class _WatchedWanted(threading.Event):
    """The session's "code is coming" event, which says when the start thread waits on it:
    from then on the thread cannot connect until code is asked for (exactly, not after a
    pause that an eager connection might or might not fill)."""

    def __init__(self) -> None:
        super().__init__()
        self.waited_on = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited_on.set()
        return super().wait(timeout)


@pytest.mark.parametrize("language", ["python", "shell"])
def test_a_launched_kernel_runs_code_once_asked(tmp_path: Path, language: str) -> None:
    session = _session(tmp_path, language)
    wanted = session._wanted = _WatchedWanted()
    try:
        session.launch()
        _launched(session)
        assert session.alive
        # The start thread is parked before connecting: a start that connected at once
        # would never wait here, and this fails instead of racing it.
        assert wanted.waited_on.wait(60), "the start thread did not wait for code"
        assert session._channels is None and not session.ready  # not connected yet
        code = "print(6 * 7)" if language == "python" else "echo $((6 * 7))"
        events = list(session.execute(code))  # waits for the kernel: connects now
        assert session.ready
        texts = [e["content"].get("text", "") for e in events if isinstance(e, dict)]
        assert "42\n" in "".join(texts)
    finally:
        session.shutdown()


def test_a_launched_kernel_that_never_ran_code_is_ended_by_shutdown(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.launch()
    pid = _launched(session)
    session.shutdown()  # the start thread, waiting to connect, ends too
    assert not session.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not a zombie
    assert session._thread is not None and not session._thread.is_alive()


ANSWER_ONLY = """
import sys
from lmc import Interpreter
interpreter = Interpreter(model=sys.argv[1], replay=sys.argv[2], auto_run=True, db_path=":memory:")
interpreter.prestart()
chunks = list(interpreter.chat("hello", display=False, stream=True))
assert any(c.get("type") == "message" and c.get("content") for c in chunks), chunks
started = interpreter.computer._sessions
assert set(started) == {"shell"}, started
print(sorted(m for m in ("jupyter_client", "zmq") if m in sys.modules))
interpreter.close()
"""


def test_an_answer_without_code_loads_no_kernel_client(tiny_model: Path, tmp_path: Path) -> None:
    replay = tmp_path / "replay.txt"
    replay.write_text("<|channel|>final<|message|>Hello!<|return|>")
    done = subprocess.run(
        [sys.executable, "-c", ANSWER_ONLY, str(tiny_model), str(replay)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
