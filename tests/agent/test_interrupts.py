"""Ctrl-C and cancel(): while the model writes and while code runs; the Interpreter survives."""

from __future__ import annotations

import gc
import inspect
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator

import pytest
from support.agent_testing import MakeInterpreter

from lmc.messages import Chunk, text_of

LONG = "word " * 4000
#: Enough for all of LONG besides the rest: a cancel that lands late (a loaded machine) leaves
#: a long partial message, and in 8,192 tokens the next turn then compacts first, which asks
#: the replayed model for a summary and uses up the next turn's completion.
ROOM = 32768
FINAL = "<|channel|>final<|message|>{}<|return|>"


def python_call(code: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{code}<|call|>"


def when(
    event: threading.Event,
    action: Callable[[], object],
    inside: Generator[Chunk, None, None] | None = None,
) -> threading.Thread:
    """Run ``action`` in a thread as soon as ``event`` is set; with ``inside``, once the main
    thread is back inside that stream too (its generator running), so that a Ctrl-C lands in
    lmc rather than in the test's own loop."""

    def wait() -> None:
        event.wait(30)
        for _ in range(30_000):  # the state itself is what is waited for, polled
            if inside is None or inspect.getgeneratorstate(inside) == inspect.GEN_RUNNING:
                break
            time.sleep(0.001)
        action()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def ctrl_c() -> None:
    """What a terminal's Ctrl-C does: SIGINT to the main thread, which interrupts a blocking
    system call (a kernel poll) as well as Python code."""
    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)


@pytest.fixture(autouse=True)
def no_stray_finalizers() -> Iterator[None]:
    """Earlier tests' garbage collected now, and no collection while a test's Ctrl-C flies: a
    KeyboardInterrupt that lands inside some object's finalizer is swallowed by Python
    ("Exception ignored in ...") and never reaches lmc, which is not what these tests test."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def is_message(chunk: Chunk) -> bool:
    return chunk["type"] == "message" and "content" in chunk


def test_ctrl_c_while_the_model_writes_keeps_the_partial_message(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [FINAL.format(LONG), FINAL.format("Still here.")], auto_run=True, context_size=ROOM
    )
    writing = threading.Event()
    stream = interpreter.chat("talk a lot", stream=True, display=False)
    thread = when(writing, ctrl_c, stream)
    try:
        with pytest.raises(KeyboardInterrupt):
            for chunk in stream:
                if is_message(chunk):
                    writing.set()
    finally:
        stream.close()
    thread.join()
    partial = interpreter.messages[-1]
    assert partial["type"] == "message"
    assert 0 < len(partial["content"]) < len(LONG)
    assert LONG.startswith(partial["content"])
    assert interpreter.store.load(interpreter.conversation_id or "")[-1] == partial
    # Usable again: the next turn sees the cut message, closed.
    assert interpreter.chat("go on", display=False)[-1]["content"] == "Still here."
    assert partial["content"] + "<|end|><|start|>user<|message|>go on<|end|>" in backend.prompts[-1]


def test_a_consumer_that_stops_mid_message_keeps_the_partial_message(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, _ = make_interpreter(
        [FINAL.format(LONG), FINAL.format("Ok.")], auto_run=True, context_size=ROOM
    )
    seen = 0
    for chunk in interpreter.chat("talk", stream=True, display=False):
        seen += is_message(chunk)
        if seen == 20:
            break
    assert 0 < len(text_of(interpreter.messages[-1])) < len(LONG)
    assert interpreter.chat("more", display=False)[-1]["content"] == "Ok."


def test_ctrl_c_while_code_runs_interrupts_the_kernel_and_keeps_its_state(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, backend = make_interpreter(
        [
            python_call("kept = 41\nimport time\nprint('started', flush=True)\ntime.sleep(60)"),
            python_call("print(kept + 1)"),
            FINAL.format("42."),
        ],
        auto_run=True,
    )
    running = threading.Event()
    stream = interpreter.chat("sleep", stream=True, display=False)
    thread = when(running, ctrl_c, stream)
    try:
        with pytest.raises(KeyboardInterrupt):
            for chunk in stream:
                if chunk.get("format") == "output" and "started" in text_of(chunk):
                    running.set()
    finally:
        stream.close()
    thread.join()
    # The code would sleep 60 s: its output ends [interrupted] only if the interrupt landed.
    assert "[interrupted]" in text_of(interpreter.messages[-1])
    assert "[interrupted]" in text_of(interpreter.store.load(interpreter.conversation_id or "")[-1])
    chunks = list(interpreter.chat("and now?", stream=True, display=False))
    assert "42" in "".join(text_of(c) for c in chunks if c.get("format") == "output")
    assert "started\n\n[interrupted]\n<|end|><|start|>user" in backend.prompts[1]


def test_cancel_from_another_thread_ends_the_turn_quietly(
    make_interpreter: MakeInterpreter,
) -> None:
    interpreter, _ = make_interpreter(
        [
            python_call("import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('woke')"),
            FINAL.format(LONG),
            FINAL.format("Done."),
        ],
        auto_run=True,
        context_size=ROOM,
    )
    running = threading.Event()
    thread = when(running, interpreter.cancel)
    for chunk in interpreter.chat("sleep", stream=True, display=False):
        if chunk.get("format") == "output" and "started" in text_of(chunk):
            running.set()
    thread.join()
    assert interpreter.messages[-1]["role"] == "computer"  # no sampling after a cancel
    assert "woke" not in str(interpreter.messages[-1]["content"])  # the run was stopped

    writing = threading.Event()
    thread = when(writing, interpreter.cancel)
    for chunk in interpreter.chat("talk", stream=True, display=False):
        if is_message(chunk):
            writing.set()
    thread.join()
    assert 0 < len(text_of(interpreter.messages[-1])) < len(LONG)
    assert interpreter.chat("again", display=False)[-1]["content"] == "Done."
