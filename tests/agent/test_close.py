"""``Interpreter.close()`` during a turn stops the turn: after close() began no model request
is sent and no kernel starts, and when it returns the kernels, their processes and the
file descriptors the Interpreter opened are gone (the review saw the model asked again, a
new kernel about half the time, and 21-24 fds left open)."""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support.agent_testing import Replayed

from lmc.agent import Interpreter
from lmc.errors import InterpreterClosedError
from lmc.messages import Chunk

WAIT = 60.0


def _code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


def _fds() -> set[str]:
    """This process's open file descriptors (llama_cpp imported first: it opens /dev/null
    twice, once per process, when imported)."""
    from lmc.backends import _llama_cpp

    _llama_cpp.llama_module()
    return set(os.listdir("/proc/self/fd"))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie is gone too


class Watch:
    """Records what the Interpreter does after close() began: model requests, new kernels."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self.late_requests = 0
        self.late_kernels = 0
        self.pids: list[int] = []
        interpreter.load()
        backend: Any = interpreter.backend
        generate = backend.generate

        def watched_generate(*args: Any, **kwargs: Any) -> Any:
            if interpreter._closed.is_set():
                self.late_requests += 1
            return generate(*args, **kwargs)

        backend.generate = watched_generate
        computer: Any = interpreter.computer
        new_session = computer._new_session

        def watched_session(*args: Any, **kwargs: Any) -> Any:
            if interpreter._closed.is_set():
                self.late_kernels += 1
            return new_session(*args, **kwargs)

        computer._new_session = watched_session
        self.computer = computer

    def kernel_pids(self) -> list[int]:
        return [s.pid for s in self.computer._sessions.values() if s.pid is not None]


@pytest.fixture
def make(replayed: Replayed) -> Replayed:
    return partial(replayed, sandbox="off")


def test_close_from_another_thread_while_code_runs(make: Any) -> None:
    before = _fds()
    interpreter = make(_code("import time; time.sleep(120)"), _final("never asked"))
    watch = Watch(interpreter)
    running = threading.Event()
    chunks: list[Chunk] = []
    failure: list[BaseException] = []

    def consume() -> None:
        try:
            for chunk in interpreter.chat("sleep", stream=True, display=False):
                chunks.append(chunk)
                if chunk.get("role") == "computer" and chunk.get("type") == "console":
                    running.set()
        except BaseException as exc:  # the test reports it below
            failure.append(exc)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    assert running.wait(WAIT), "the code never started"
    pids = watch.kernel_pids()
    assert pids
    interpreter.close()
    thread.join(WAIT)
    assert not thread.is_alive(), "the turn went on after close()"
    assert failure == []
    assert watch.late_requests == 0  # the model was not asked again
    assert watch.late_kernels == 0
    assert all(_gone(pid) for pid in pids)
    assert interpreter._backend is None and interpreter._computer is None
    assert _fds() <= before, "file descriptors left open"
    assert not any(
        c.get("role") == "assistant" and "never" in str(c.get("content")) for c in chunks
    )


def test_close_inside_the_stream_stops_it_where_it_is(make: Any) -> None:
    before = _fds()
    interpreter = make(_code("print('ran')"), _final("after the code"))
    watch = Watch(interpreter)
    seen: list[Chunk] = []
    for chunk in interpreter.chat("go", stream=True, display=False):
        seen.append(chunk)
        if chunk.get("role") == "assistant":
            pids = watch.kernel_pids()  # the python kernel started ahead of need
            interpreter.close()
    assert watch.late_requests == 0 and watch.late_kernels == 0
    assert not any(c.get("role") == "computer" for c in seen)  # the code never ran
    assert all(_gone(pid) for pid in pids)
    assert _fds() <= before


def test_chat_after_close_is_one_clear_error(make: Any) -> None:
    interpreter = make(_final("hi"))
    interpreter.close()
    with pytest.raises(InterpreterClosedError, match="has been closed"):
        interpreter.chat("hello", display=False)
    interpreter.close()  # closing twice is harmless
