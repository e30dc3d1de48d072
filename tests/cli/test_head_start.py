"""``lmc run``'s shell kernel launched ahead (lmc.cli.head_start), with real kernels.

Checked from outside: the launched kernel is a live child process of lmc when
:func:`launch_shell` returns; the run's interpreter gets a computer that runs that kernel
(state kept under the new conversation's id) only when its settings are the same; a head start
that was not taken is shut down, its processes gone; a run that fails before its model
answers leaves no kernel and no kernel file behind; runs that stop before any code (empty
prompt, audio) or run code elsewhere (a kernel gateway) launch nothing.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import descendants, wait_gone
from support.served_servers import stand_in

from lmc.agent.chatting import PRESTART
from lmc.cli.head_start import FIRST_KERNEL, HeadStart, launch_shell
from lmc.cli.options import SharedOptions
from lmc.cli.run_args import RunArgs
from lmc.cli.session import Session, open_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_env(
    lmc_env: dict[str, str], tmp_path: Path, short_tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """lmc's files under tmp_path, kernels' files under a short TMPDIR; the work dir."""
    for key, value in lmc_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TMPDIR", str(short_tmpdir))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    yield work


def _run(work: Path, prompt: str | None = "list the files", **given: object) -> RunArgs:
    return RunArgs(prompt, None, {"workdir": str(work), "auto_run": True, **given})


def test_the_first_kernel_launched_ahead_is_the_first_the_interpreter_prestarts() -> None:
    assert PRESTART[0] == FIRST_KERNEL


def test_the_interpreter_takes_the_launched_shell_and_runs_code_on_it(run_env: Path) -> None:
    head = launch_shell(_run(run_env))
    assert head is not None
    launched = descendants(os.getpid())
    assert launched, "no kernel process was spawned"
    session = open_session(SharedOptions(**_run(run_env).given), head)
    assert isinstance(session, Session)
    interpreter = session.interpreter
    try:
        assert head.done
        # The computer made for the interpreter runs the very kernel launched ahead.
        assert interpreter.computer._sessions["shell"] is head.ahead.session
        output = "".join(
            str(chunk.get("content", ""))
            for chunk in interpreter.computer.run("shell", "echo from-the-head-start")
        )
        assert "from-the-head-start" in output
        assert launched <= descendants(os.getpid())  # the same kernel, not a second one
        # The shell keeps its state under the id the new conversation gets.
        state = Path(os.environ["LMC_DATA_DIR"]) / "kernel-state" / head.conversation_id
        assert state.is_dir()
    finally:
        interpreter.close()
        head.close()  # taken: nothing more to do
    assert wait_gone(launched, 60) == set()


def test_a_head_start_not_taken_is_shut_down_with_its_kernel_and_state(run_env: Path) -> None:
    head = launch_shell(_run(run_env, sandbox="off"))
    assert head is not None
    assert (Path(os.environ["LMC_DATA_DIR"]) / "kernel-state" / head.conversation_id).is_dir()
    launched = descendants(os.getpid())
    assert launched
    other = open_session(SharedOptions(**_run(run_env, sandbox="off").given))
    assert isinstance(other, Session)
    try:
        changed = dataclasses.replace(head.settings, max_steps=head.settings.max_steps + 1)
        other.interpreter.settings = changed
        head.hand_to(other.interpreter)  # other settings: it keeps its own computer
        assert not head.done
    finally:
        other.interpreter.close()
        head.close()
    assert head.done
    assert wait_gone(launched, 60) == set()
    # The state folder made for a conversation that never began goes too.
    assert not (Path(os.environ["LMC_DATA_DIR"]) / "kernel-state" / head.conversation_id).exists()


@pytest.mark.parametrize(
    "run",
    [
        RunArgs("   ", None, {}),  # an empty prompt: lmc says so and stops
        RunArgs(None, "speech.wav", {}),  # audio: transcribed before the model's first words
    ],
    ids=["empty-prompt", "audio"],
)
def test_a_run_that_stops_before_code_launches_nothing(run: RunArgs, run_env: Path) -> None:
    assert launch_shell(run) is None
    assert descendants(os.getpid()) == set()


def test_kernels_on_a_gateway_are_not_launched_here(run_env: Path) -> None:
    Path(os.environ["LMC_CONFIG"]).write_text('kernel_gateway = "http://127.0.0.1:9"\n')
    assert launch_shell(_run(run_env)) is None
    assert descendants(os.getpid()) == set()


def test_a_run_that_fails_before_the_model_answers_leaves_no_kernel(
    lmc_env: dict[str, str], tmp_path: Path, short_tmpdir: Path
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "TMPDIR": str(short_tmpdir)}
    command = [sys.executable, "-m", "lmc", "run", "-y", "--api-style", "completions"]
    child = subprocess.run(
        [*command, "--api-base", f"http://127.0.0.1:{port}/v1", "--workdir", str(tmp_path), "hi"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 1, child.stderr
    assert "Traceback" not in child.stderr
    assert sorted(p.name for p in short_tmpdir.iterdir()) == []  # no lmc-kernels-*


def test_the_servers_context_is_asked_ahead_and_read_once(run_env: Path) -> None:
    with stand_in("vllm") as (record, _stand):
        run = _run(run_env, api_base=record.root, api_style="completions")
        head = launch_shell(run)
        assert head is not None
        try:
            deadline = threading.Event()
            for _ in range(3000):  # the GETs run in threads: they arrive in a moment
                if len(record.requests) >= 4:
                    break
                deadline.wait(0.01)
            asked = sorted(path for path, _body, _headers in record.requests)
            assert asked == ["/api/v0/models", "/api/version", "/props", "/v1/models"]
            session = open_session(SharedOptions(**run.given), head)
            assert isinstance(session, Session)
            try:
                assert session.interpreter.backend.context_size == 4096
                again = sorted(path for path, _body, _headers in record.requests)
                assert again == asked  # the backend took the answers: nothing asked twice
            finally:
                session.interpreter.close()
        finally:
            head.close()


def test_head_start_close_is_idempotent(run_env: Path) -> None:
    head = launch_shell(_run(run_env, sandbox="off"))
    assert isinstance(head, HeadStart)
    launched = descendants(os.getpid())
    head.close()
    head.close()
    assert wait_gone(launched, 60) == set()
