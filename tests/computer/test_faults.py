"""Faults, each with a real kernel: interrupts, timeouts, dying kernels, stdin, huge output."""

from __future__ import annotations

import json
import os
import resource
import stat
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer
from lmc.computer.kernel import KernelSession
from lmc.messages import Chunk, text_of


def _local_session(computer: Computer) -> KernelSession:
    """The python kernel, one on this machine (a gateway's would be another kind)."""
    session = computer._sessions["python"]
    assert isinstance(session, KernelSession)
    return session


def _python_session(computer: Computer) -> KernelSession:
    collect(computer, "python", "pass")  # make sure it is up
    return _local_session(computer)


def test_interrupt_stops_running_code_and_state_survives(computer: Computer) -> None:
    collect(computer, "python", "survivor = 'still here'")
    chunks, interrupted = [], False
    for chunk in computer.run("python", "while True:\n    pass"):  # ends only if interrupted
        chunks.append(chunk)
        running = chunk.get("format") == "active_line" and chunk.get("content") is not None
        if running and not interrupted:  # the loop has begun: interrupt it once
            computer.interrupt()
            interrupted = True
    assert "KeyboardInterrupt" in output_of(chunks)
    assert output_of(collect(computer, "python", "print(survivor)")) == "still here\n"


def test_timeout_interrupts_and_says_so(computer: Computer) -> None:
    out = output_of(collect(computer, "python", "import time\ntime.sleep(30)", timeout=0.5))
    assert "Timed out after 0.5 s" in out
    assert "KeyboardInterrupt" in out
    assert output_of(collect(computer, "python", "print('after')")) == "after\n"


def test_no_timeout_by_default() -> None:
    assert Computer().timeout is None


def test_consumer_abandoning_a_run_interrupts_it(computer: Computer) -> None:
    code = "import time\nprint('start', flush=True)\ntime.sleep(30)\nslept = True"
    run = computer.run("python", code)
    assert isinstance(run, Generator)  # what a consumer that stops early closes
    for chunk in run:
        if chunk.get("content") == "start\n":
            break
    run.close()
    # The kernel runs one request at a time: had the sleep gone on, this would see `slept`.
    assert output_of(collect(computer, "python", "print('slept' in globals())")) == "False\n"


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import os\nos._exit(3)", "exited with status 3"),
        ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
        # What the out-of-memory killer does: SIGKILL, no chance to clean up.
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "SIGKILL"),
    ],
    ids=["os._exit", "segfault", "oom-kill"],
)
def test_dying_kernel_is_reported_and_replaced(code: str, why: str) -> None:
    with Computer() as computer:
        collect(computer, "python", "doomed = 1")
        out = output_of(
            collect(computer, "python", f"import time\nprint('before')\ntime.sleep(0.3)\n{code}")
        )
        assert out.startswith("before\n")
        assert "kernel died" in out and why in out
        after = output_of(collect(computer, "python", "print('doomed' in globals())"))
        assert after == "False\n"


def test_kernel_that_died_while_idle_is_replaced_before_the_next_run() -> None:
    with Computer() as computer:
        session = _python_session(computer)
        assert session.pid is not None
        os.kill(session.pid, 9)
        deadline = time.monotonic() + 5
        while session.alive and time.monotonic() < deadline:
            time.sleep(0.01)
        out = output_of(collect(computer, "python", "print('fresh')"))
        assert "had died since the last run" in out
        assert out.endswith("fresh\n")


def test_interrupt_ignored_restarts_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmc.computer import run_watch

    monkeypatch.setattr(run_watch, "INTERRUPT_GRACE", 1.0)
    code = (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('stubborn', flush=True)\ntime.sleep(60)"
    )
    with Computer() as computer:
        chunks = []
        interrupted = False
        for chunk in computer.run("python", code):  # interrupt once the code is surely running
            chunks.append(chunk)
            if "stubborn" in str(chunk.get("content")) and not interrupted:
                interrupted = True
                computer.interrupt()
        assert interrupted, "the code never started"
        assert "did not stop" in output_of(chunks)  # said only when the kernel is restarted
        assert output_of(collect(computer, "python", "print('back')")) == "back\n"


def _rss_mb() -> float:
    # Current resident size (ru_maxrss would only ever show the peak of the whole test run).
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_huge_output_streams_without_memory_growth(computer: Computer) -> None:
    # 300 MB through the stream; the consumer keeps only a bounded copy.
    from lmc.computer import BoundedOutput

    code = "line = 'x' * 999\nfor _ in range(300_000):\n    print(line)\nprint('the end')"
    bounded = BoundedOutput(10_000)
    before = _rss_mb()
    peak = before
    total = 0
    for chunk in computer.run("python", code):
        if chunk.get("format") == "output":
            total += len(text_of(chunk))
            bounded.add(text_of(chunk))
            peak = max(peak, _rss_mb())
    assert total == 300_000 * 1000 + len("the end\n")
    assert peak - before < 64
    text = bounded.text()
    assert text.endswith("the end\n") and "300,000,008 characters" in text
    assert len(text) < 10_200


@pytest.mark.parametrize("sandbox", ["workspace", "off"])
def test_connection_files_are_private_and_kernels_use_ipc_sockets(sandbox: str) -> None:
    with Computer(sandbox=sandbox) as computer:
        session = _python_session(computer)
        path = session.connection_file
        assert path is not None and session.pid is not None
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.parent.stat().st_mode & 0o777 == 0o700
        info = json.loads(path.read_text())
        assert info["transport"] == "ipc" and info["ip"] == str(path.parent / "s")
        assert (path.parent / f"s-{info['shell_port']}").is_socket()
        if sys.platform.startswith("linux") and sandbox == "off":  # same network namespace
            # ipykernel itself listens on one loopback port besides the ipc sockets
            assert _listening_addresses(session.pid) <= {"127.0.0.1"}


def _listening_addresses(pid: int) -> set[str]:
    """IPv4 addresses the process listens on, from /proc (no tools needed)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # an fd closed while we looked
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode in inodes and state == "0A":  # LISTEN
                hex_ip = local.split(":")[0]
                if len(hex_ip) == 8:
                    addresses.add(".".join(str(int(hex_ip[i : i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    addresses.add("ipv6:" + hex_ip)
    return addresses


def _hold_the_handshake(
    monkeypatch: pytest.MonkeyPatch, until: Callable[[KernelSession], bool]
) -> None:
    """Kernels start as usual but wait before their handshake until ``until(session)`` (at
    most 30 s): a test acts while a kernel is surely still starting."""
    handshake = KernelSession._handshake

    def held(session: KernelSession) -> None:
        deadline = time.monotonic() + 30
        while not until(session) and time.monotonic() < deadline:
            time.sleep(0.01)
        handshake(session)

    monkeypatch.setattr(KernelSession, "_handshake", held)


def test_prestart_hides_the_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    go = threading.Event()
    _hold_the_handshake(monkeypatch, lambda _session: go.is_set())
    with Computer() as computer:
        computer.prestart(["python"])  # returns at once; the start goes on behind
        session = _local_session(computer)
        assert not session.ready  # had prestart waited for the kernel, it would be
        go.set()
        session.wait_ready()
        pid = session.pid
        assert output_of(collect(computer, "python", "print(1)")) == "1\n"
        assert computer._sessions["python"] is session and session.pid == pid  # that kernel


def test_close_stops_the_kernel_and_removes_its_files() -> None:
    computer = Computer()
    session = _python_session(computer)
    assert session.connection_file is not None
    pid, runtime = session.pid, session.connection_file.parent
    computer.close()
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert not runtime.exists()
    out = output_of(collect(computer, "python", "print(1)"))
    assert "closed" in out


def test_restart_loses_state(computer: Computer) -> None:
    collect(computer, "python", "before_restart = 1")
    computer.restart("python")
    out = output_of(collect(computer, "python", "print('before_restart' in globals())"))
    assert out == "False\n"


def test_kernel_that_cannot_start_is_reported_with_its_own_words(tmp_path: Path) -> None:
    from lmc.computer.kernel import KernelSession
    from lmc.computer.kernelspecs import KernelSpec
    from lmc.errors import ComputerError

    spec = KernelSpec(
        name="broken",
        argv=(sys.executable, "-c", "import sys; sys.exit('there is no IRkernel here')"),
        language="none",
        resource_dir=tmp_path,
    )
    session = KernelSession(spec, runtime_dir=tmp_path)
    with pytest.raises(ComputerError) as caught:
        session.wait_ready()
    message = str(caught.value)
    assert "failed to start" in message and "exited with status 1" in message
    assert "there is no IRkernel here" in message
    session.shutdown()


def test_close_during_a_run_ends_the_run() -> None:
    computer = Computer()
    collect(computer, "python", "pass")
    chunks: list[Chunk] = []
    going = threading.Event()

    def consume() -> None:
        for chunk in computer.run(
            "python", "import time\nprint('going', flush=True)\ntime.sleep(30)"
        ):
            chunks.append(chunk)
            if "going" in output_of([chunk]):
                going.set()

    runner = threading.Thread(target=consume)
    runner.start()
    assert going.wait(60), "the code never started"  # closed while it runs, not before
    computer.close()
    runner.join(5)
    assert not runner.is_alive()
    assert chunks[-1] == {"role": "computer", "type": "console", "end": True}
    assert "going\n" in output_of(chunks)
    assert "the computer was closed" in output_of(chunks)


def test_close_while_a_kernel_is_still_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start is stopped where it is (its process killed), not finished and then shut
    down: the held handshake goes on only once the kernel process is dead."""
    _hold_the_handshake(monkeypatch, lambda session: not session.alive)
    computer = Computer()
    computer.prestart(["python"])
    session = _local_session(computer)
    computer.close()
    assert not session.alive and session.ready_at is None  # it never answered
    assert not session.ready


def test_interrupt_from_a_signal_handler_like_ctrl_c(computer: Computer) -> None:
    import signal

    previous = signal.signal(signal.SIGALRM, lambda *_: computer.interrupt())
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        out = output_of(collect(computer, "python", "while True:\n    pass"))  # ends if interrupted
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert "KeyboardInterrupt" in out


def test_interrupting_a_busy_shell_function_lands_every_time(computer: Computer) -> None:
    """The interrupt that used to be lost about one time in seven (a SIGINT landing while
    bash ran its DEBUG trap), 20 times in a row, the shell's state kept throughout."""
    collect(computer, "shell", "kept=still-here")
    code = "spin() { while :; do :; done; }; spin; echo not-reached"
    for attempt in range(20):
        timer = threading.Timer(0.2 + attempt * 0.01, computer.interrupt)
        timer.start()
        out = output_of(collect(computer, "shell", code))
        timer.join()
        assert "not-reached" not in out
        assert "restarted" not in out, f"attempt {attempt}: the interrupt was ignored"
        assert output_of(collect(computer, "shell", "echo $kept")) == "still-here\n", attempt


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("language", "spawn", "busy"),
    [
        ("shell", "sleep 300 & echo $!", "while :; do :; done"),
        (
            "javascript",
            "const child = require('child_process').spawn('sleep', ['300']); "
            "console.log(child.pid)",
            "while (true) {}",
        ),
    ],
)
def test_closing_a_busy_wrapper_kernel_ends_its_children(
    language: str, spawn: str, busy: str
) -> None:
    """The wrapped bash or node runs in a session of its own: only the kernel's shutdown
    (``do_shutdown`` closing it) ends the children it started. Without a sandbox: inside
    one, the PIDs the code prints are the sandbox's own, and its PID namespace ends every
    child anyway (tests/computer/sandbox)."""
    computer = Computer(sandbox="off")
    try:
        child = int(output_of(collect(computer, language, spawn)).split()[-1])
        assert _alive(child)
        started = threading.Event()

        def run_busy() -> None:
            for chunk in computer.run(language, busy):
                if chunk.get("format") == "active_line" and chunk.get("content"):
                    started.set()

        runner = threading.Thread(target=run_busy)
        runner.start()
        assert started.wait(30), "the busy loop never started"
    finally:
        computer.close()
    runner.join(30)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), f"{language}: the kernel's child outlived it"


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("python", "for i in range(20_000):\n    print(i, flush=True)"),
        ("shell", "for i in $(seq 0 19999); do echo $i; done"),
        ("javascript", "for (let i = 0; i < 20000; i++) console.log(i)"),
    ],
)
def test_a_reader_that_pauses_loses_no_output(computer: Computer, language: str, code: str) -> None:
    """A kernel printing while lmc is not reading waits for it: every message arrives, the
    run's idle status included (a dropped one left the run waiting forever)."""
    collect(computer, language, "1" if language != "shell" else "true")
    texts = []
    paused = False
    for chunk in computer.run(language, code):
        if chunk.get("format") == "output":
            texts.append(text_of(chunk))
            if not paused:
                paused = True
                time.sleep(3)  # the kernel goes on printing meanwhile
    assert "".join(texts).split() == [str(i) for i in range(20_000)]


@pytest.mark.parametrize("sandbox", ["workspace", "off"])
def test_a_deep_temporary_directory_still_starts_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    """Unix socket paths hold about 100 bytes; a deep TMPDIR must not stop the kernels."""
    import tempfile

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer
    with Computer(sandbox=sandbox, workdir=tmp_path) as computer:
        assert output_of(collect(computer, "python", "print(6 * 7)")) == "42\n"
        assert output_of(collect(computer, "shell", "echo ok")) == "ok\n"
