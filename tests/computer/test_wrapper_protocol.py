"""The wrapper kernels' own Jupyter protocol (kernels/lmc_wrapper/base.py), request by request,
driven by jupyter_client's BlockingKernelClient as any non-lmc client would."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from jupyter_client.blocking.client import BlockingKernelClient
from support.kernel_testing import KERNELS, KernelDriver, kernel_pid, running_kernel
from support.processes import descendants, wait_gone

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 15.0
CHANNEL_NAMES = ("shell", "iopub", "stdin", "control", "hb")


@pytest.fixture(scope="module")
def shell() -> Iterator[KernelDriver]:
    with running_kernel("lmc_shell") as driver:
        yield driver


def request(
    client: BlockingKernelClient,
    msg_type: str,
    content: dict[str, Any] | None = None,
    *,
    channel: str = "shell",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send one request; its reply and the IOPub messages it caused, up to its idle status."""
    message = client.session.msg(msg_type, content or {})
    msg_id = message["header"]["msg_id"]
    sender = client.shell_channel if channel == "shell" else client.control_channel
    sender.send(message)
    reply = sender.get_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = sender.get_msg(timeout=TIMEOUT)
    published: list[dict[str, Any]] = []
    while not published or published[-1]["content"] != {"execution_state": "idle"}:
        iopub = client.get_iopub_msg(timeout=TIMEOUT)
        if iopub["parent_header"].get("msg_id") == msg_id:
            published.append(iopub)
    return reply, published


def types(published: list[dict[str, Any]]) -> list[str]:
    return [m["msg_type"] for m in published]


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_kernel_info_on_either_channel(shell: KernelDriver, channel: str) -> None:
    reply, published = request(shell.client, "kernel_info_request", channel=channel)
    assert reply["msg_type"] == "kernel_info_reply"
    content = reply["content"]
    assert content["status"] == "ok"
    assert content["protocol_version"] == "5.3"
    assert content["implementation"] == "lmc_shell"
    assert content["language_info"]["name"] == "bash"
    assert content["debugger"] is False
    assert types(published) == ["status", "status"]
    assert [m["content"]["execution_state"] for m in published] == ["busy", "idle"]


def test_execute_publishes_busy_input_output_idle_in_order(shell: KernelDriver) -> None:
    reply, published = request(shell.client, "execute_request", {"code": "echo hi"})
    assert types(published) == [
        "status",
        "execute_input",
        "lmc_active_line",
        "stream",
        "lmc_active_line",
        "status",
    ]
    assert published[1]["content"]["code"] == "echo hi"
    count = published[1]["content"]["execution_count"]
    assert reply["content"] == {
        "status": "ok",
        "execution_count": count,
        "payload": [],
        "user_expressions": {},
    }
    again, _ = request(shell.client, "execute_request", {"code": "true"})
    assert again["content"]["execution_count"] == count + 1


def test_silent_execute_publishes_no_input_nor_output(shell: KernelDriver) -> None:
    reply, published = request(shell.client, "execute_request", {"code": "echo x", "silent": True})
    assert reply["content"]["status"] == "ok"
    assert "execute_input" not in types(published)
    assert "stream" not in types(published)


def test_error_reply_and_error_message(shell: KernelDriver) -> None:
    reply, published = request(shell.client, "execute_request", {"code": "exit 3"})
    errors = [m["content"] for m in published if m["msg_type"] == "error"]
    assert errors and errors[0]["ename"] == "ShellExited"
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "ShellExited"


@pytest.mark.parametrize("stop_on_error", [True, False])
def test_requests_waiting_behind_an_error_are_aborted_on_stop_on_error(
    shell: KernelDriver, tmp_path: Path, stop_on_error: bool
) -> None:
    client = shell.client
    gate = tmp_path / "go"
    first = client.execute(
        f"while [ ! -e {gate} ]; do sleep 0.02; done; false", stop_on_error=stop_on_error
    )
    second = client.execute("echo second")
    third = client.kernel_info()
    time.sleep(0.5)  # both reach the kernel's queue while the first still waits for the gate
    gate.touch()
    replies: dict[str, dict[str, Any]] = {}
    while len(replies) < 3:
        reply = client.get_shell_msg(timeout=TIMEOUT)
        replies[reply["parent_header"]["msg_id"]] = reply
    assert replies[first]["content"]["status"] == "error"
    expected = "aborted" if stop_on_error else "ok"
    assert replies[second]["content"]["status"] == expected
    assert replies[third]["content"]["status"] == "ok"  # only execute requests are aborted
    assert request(client, "execute_request", {"code": "echo after"})[0]["content"]["status"] == (
        "ok"
    )


@pytest.mark.parametrize(
    ("msg_type", "content", "expected"),
    [
        ("is_complete_request", {"code": "echo hi"}, {"status": "unknown"}),
        (
            "complete_request",
            {"code": "ech", "cursor_pos": 3},
            {"status": "ok", "matches": [], "cursor_start": 3, "cursor_end": 3, "metadata": {}},
        ),
        (
            "inspect_request",
            {"code": "echo", "cursor_pos": 2, "detail_level": 0},
            {"status": "ok", "found": False, "data": {}, "metadata": {}},
        ),
        (
            "history_request",
            {"output": False, "raw": True, "hist_access_type": "tail", "n": 10},
            {"status": "ok", "history": []},
        ),
        ("comm_info_request", {}, {"status": "ok", "comms": {}}),
    ],
)
def test_the_minimal_requests(
    shell: KernelDriver, msg_type: str, content: dict[str, Any], expected: dict[str, Any]
) -> None:
    for channel in ("shell", "control"):
        reply, published = request(shell.client, msg_type, content, channel=channel)
        assert reply["msg_type"] == msg_type.replace("_request", "_reply")
        assert reply["content"] == expected
        assert types(published) == ["status", "status"]


def test_connect_request_names_the_ports(shell: KernelDriver) -> None:
    reply, _ = request(shell.client, "connect_request")
    info = shell.manager.get_connection_info()
    for name in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
        assert reply["content"][name] == info[name]


def test_an_unknown_request_gets_a_clear_error_reply(shell: KernelDriver) -> None:
    reply, published = request(shell.client, "frobnicate_request", {})
    assert reply["msg_type"] == "frobnicate_reply"
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UnknownMessageType"
    assert "frobnicate_request" in reply["content"]["evalue"]
    assert types(published) == ["status", "status"]


def test_a_comm_open_is_closed_at_once(shell: KernelDriver) -> None:
    message = shell.client.session.msg(
        "comm_open", {"comm_id": "c1", "target_name": "jupyter.widget", "data": {}}
    )
    shell.client.shell_channel.send(message)
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["content"] != {"execution_state": "idle"}:
        iopub = shell.client.get_iopub_msg(timeout=TIMEOUT)
        if iopub["parent_header"].get("msg_id") == message["header"]["msg_id"]:
            seen.append(iopub)
    closes = [m["content"] for m in seen if m["msg_type"] == "comm_close"]
    assert closes == [{"comm_id": "c1", "data": {}}]


def test_interrupt_request_on_control_stops_the_run(shell: KernelDriver) -> None:
    client = shell.client
    msg_id = client.execute("echo started; sleep 30")
    while True:  # the block runs
        message = client.get_iopub_msg(timeout=TIMEOUT)
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "stream":
            break
    reply, _ = request(client, "interrupt_request", channel="control")
    assert reply["content"]["status"] == "ok"
    execute_reply = client.get_shell_msg(timeout=TIMEOUT)
    while execute_reply["parent_header"].get("msg_id") != msg_id:
        execute_reply = client.get_shell_msg(timeout=TIMEOUT)
    assert execute_reply["content"]["ename"] == "KeyboardInterrupt"
    still = shell.run("echo still")
    assert still.text() == "still\n", (still.reply, still.events)


def test_heartbeat_echoes(shell: KernelDriver) -> None:
    info = shell.manager.get_connection_info()
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    socket = context.socket(zmq.REQ)
    socket.linger = 0
    ip, port = info["ip"], info["hb_port"]
    socket.connect(f"tcp://{ip}:{port}" if info["transport"] == "tcp" else f"ipc://{ip}-{port}")
    try:
        socket.send(b"ping 1")
        assert socket.poll(int(TIMEOUT * 1000))
        assert socket.recv() == b"ping 1"
    finally:
        socket.close()


def test_a_badly_signed_message_is_dropped_and_the_kernel_goes_on(shell: KernelDriver) -> None:
    client = shell.client
    key = client.session.key
    try:
        client.session.key = b"not the key"
        forged = client.kernel_info()
    finally:
        client.session.key = key
    reply, _ = request(client, "kernel_info_request")
    assert reply["parent_header"]["msg_id"] != forged
    with pytest.raises(queue.Empty):
        client.get_shell_msg(timeout=0.5)


@pytest.mark.parametrize("language", ["lmc_shell", "lmc_javascript"])
def test_a_plain_jupyter_client_runs_code_and_gets_output(language: str) -> None:
    if language == "lmc_javascript" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    code = "echo hello; echo oops >&2" if language == "lmc_shell" else "console.log('hello'); 6*7"
    with running_kernel(language) as driver:
        outputs: list[dict[str, Any]] = []
        reply = driver.client.execute_interactive(code, output_hook=outputs.append, timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok"
        streams = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
        assert streams[0] == "hello\n"
        if language == "lmc_shell":
            assert streams[1:] == ["oops\n"]
        else:
            results = [m for m in outputs if m["msg_type"] == "execute_result"]
            assert results[0]["content"]["data"] == {"text/plain": "42"}


@pytest.mark.parametrize("channel", ["control", "shell"])
def test_shutdown_request_ends_the_kernel_and_its_children(channel: str) -> None:
    """On control even mid-run (its own thread answers); on shell once the shell is free."""
    with running_kernel("lmc_shell") as driver:
        client = driver.client
        code = "sleep 60 &" if channel == "shell" else "sleep 60 & echo started; sleep 60"
        msg_id = client.execute(code)
        while True:
            message = client.get_iopub_msg(timeout=TIMEOUT)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream" or message["content"].get("execution_state") == (
                "idle"
            ):
                break
        pid = kernel_pid(driver.manager)
        children = descendants(pid)
        assert children
        reply, published = request(client, "shutdown_request", {"restart": False}, channel=channel)
        assert reply["msg_type"] == "shutdown_reply"
        assert reply["content"] == {"status": "ok", "restart": False}
        assert "shutdown_reply" in types(published)
        assert wait_gone({pid, *children}, timeout=TIMEOUT) == set()


def test_ports_of_zero_are_chosen_and_written_back(tmp_path: Path) -> None:
    connection = tmp_path / "kernel.json"
    info = {
        "transport": "tcp",
        "ip": "127.0.0.1",
        "key": "secret",
        "signature_scheme": "hmac-sha256",
        **{f"{name}_port": 0 for name in CHANNEL_NAMES},
    }
    connection.write_text(json.dumps(info))
    script = KERNELS / "lmc_shell" / "lmc_shell_kernel.py"
    process = subprocess.Popen(
        [sys.executable, str(script), "-f", str(connection)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    client = BlockingKernelClient()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not json.loads(connection.read_text() or "{}").get("hb_port"):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        client.load_connection_file(str(connection))
        client.start_channels()
        client.wait_for_ready(timeout=TIMEOUT)
        reply, _ = request(client, "shutdown_request", {"restart": False}, channel="control")
        assert reply["content"]["status"] == "ok"
        assert process.wait(TIMEOUT) == 0
    finally:
        client.stop_channels()
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()


@pytest.mark.parametrize("argv", [["-f", "/nonexistent/kernel.json"], []])
def test_a_kernel_that_cannot_start_says_why_in_one_line(argv: list[str]) -> None:
    script = KERNELS / "lmc_shell" / "lmc_shell_kernel.py"
    done = subprocess.run(
        [sys.executable, str(script), *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode in (1, 2)
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(("lmc kernel: cannot start with", "usage:"))


def test_the_kernel_ends_when_its_kernel_manager_is_gone(tmp_path: Path) -> None:
    """A kernel manager killed outright (JPY_PARENT_PID names it) takes its kernel along."""
    connection = tmp_path / "kernel.json"
    info = {
        "transport": "ipc",
        "ip": str(tmp_path / "kernel"),
        "key": "secret",
        "signature_scheme": "hmac-sha256",
        **{
            f"{name}_port": n
            for n, name in enumerate(("shell", "iopub", "stdin", "control", "hb"), 1)
        },
    }
    connection.write_text(json.dumps(info))
    script = KERNELS / "lmc_shell" / "lmc_shell_kernel.py"
    manager = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time\n"
            "env = {**os.environ, 'JPY_PARENT_PID': str(os.getpid())}\n"
            "kernel = subprocess.Popen([sys.executable, *sys.argv[1:]], env=env,"
            " start_new_session=True, stdin=subprocess.DEVNULL)\n"
            "print(kernel.pid, flush=True)\n"
            "time.sleep(600)",
            str(script),
            "-f",
            str(connection),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    client = BlockingKernelClient()
    kernel = 0
    try:
        assert manager.stdout is not None
        kernel = int(manager.stdout.readline())
        client.load_connection_file(str(connection))
        client.start_channels()
        client.wait_for_ready(timeout=TIMEOUT)
        started = {kernel, *descendants(kernel)}
        assert len(started) > 1  # the kernel and its bash
        manager.kill()
        manager.wait()
        assert wait_gone(started, timeout=TIMEOUT) == set()
    finally:
        client.stop_channels()
        if manager.poll() is None:
            manager.kill()
            manager.wait()
        if kernel:  # still there when the test failed: its process group goes (bash dies with it)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(kernel, signal.SIGKILL)
