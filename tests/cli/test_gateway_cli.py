"""``lmc run/serve/doctor --kernel-gateway URL`` against a real Jupyter Kernel Gateway.

The tiny model is forced by a replay to write python; the code runs on the gateway (stock
ipykernel), and every check of cleanup is made from outside, on the gateway's own
``GET /api/kernels``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli_replays import code, final
from support.kernel_gateway import KernelGateway, free_port, start_kernel_gateway
from support.serving import Serving, stderr_of
from typer.testing import CliRunner
from websockets.sync.client import connect

from lmc.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0

Replay = Callable[..., Path]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    started = start_kernel_gateway(tmp_path_factory.mktemp("gateway"))
    try:
        yield started
    finally:
        started.stop()


def _invoke(env: dict[str, str], *args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def _chunks(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _output(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["content"] for c in chunks if c.get("format") == "output")


def test_run_runs_python_on_the_gateway_with_active_lines_and_deletes_the_kernel(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, gateway: KernelGateway
) -> None:
    path = replay(code("import os\nprint(1)\nprint(os.environ['KERNEL_USERNAME'])"), final("ok"))
    env = {
        **lmc_env,
        "LMC_KERNEL_GATEWAY_TOKEN": gateway.token,
        "LMC_KERNEL_GATEWAY_USERNAME": "ada",
    }
    result = _invoke(
        env, "run", "-y", "--json", "-m", str(tiny_model), "--replay", str(path),
        "--kernel-gateway", gateway.url, "print one",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    chunks = _chunks(result.stdout)
    lines = [c["content"] for c in chunks if c.get("format") == "active_line"]
    assert lines == ["1", "2", "3", None]
    assert _output(chunks) == "1\nada\n"
    assert gateway.wait_for_kernels(0) == []


@pytest.mark.parametrize("case", ["wrong token", "no token", "unreachable", "unknown kernelspec"])
def test_an_unusable_gateway_ends_run_before_the_model_is_asked(
    case: str, lmc_env: dict[str, str], gateway: KernelGateway, tmp_path: Path
) -> None:
    url = gateway.url
    env = {**lmc_env, "LMC_KERNEL_GATEWAY_TOKEN": gateway.token}
    expected = f"the kernel gateway at {url} refused the token (HTTP 401)"
    if case == "wrong token":
        env["LMC_KERNEL_GATEWAY_TOKEN"] = "wrong"
    elif case == "no token":
        del env["LMC_KERNEL_GATEWAY_TOKEN"]
        expected = f"the kernel gateway at {url} wants a token (HTTP 401)"
    elif case == "unreachable":
        url = f"http://127.0.0.1:{free_port()}"
        expected = f"cannot reach the kernel gateway at {url}"
    else:
        env["LMC_KERNEL_GATEWAY_KERNELS"] = "python=nope"
        expected = f"the kernel gateway at {url} has no kernelspec 'nope' for python"
    # No such model: had lmc asked the model first, the error would be about the model.
    missing_model = str(tmp_path / "no-such-model.gguf")
    result = _invoke(env, "run", "-y", "-m", missing_model, "--kernel-gateway", url, "hi")
    assert result.exit_code == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"lmc: error: {expected}"), line


def _start_lmc(
    env: dict[str, str], tiny_model: Path, replay_path: Path, gateway: KernelGateway, cwd: Path
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lmc",
            "run",
            "--json",
            "-y",
            "-m",
            str(tiny_model),
            "--replay",
            str(replay_path),
            "--kernel-gateway",
            gateway.url,
            "go",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            **env,
            "PYTHONPATH": str(ROOT),
            "LMC_KERNEL_GATEWAY_TOKEN": gateway.token,
        },
        cwd=cwd,
        start_new_session=True,
        text=True,
    )


def _read_until(child: subprocess.Popen[str], marker: str) -> list[str]:
    assert child.stdout is not None and child.stderr is not None
    lines = []
    for line in child.stdout:
        lines.append(line)
        chunk = json.loads(line)
        if chunk.get("format") == "output" and marker in chunk.get("content", ""):
            return lines
    raise AssertionError(f"lmc ended before the code printed {marker!r}: {child.stderr.read()}")


def _finish(child: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_interrupts_the_remote_code_and_deletes_the_kernel(
    signum: int,
    lmc_env: dict[str, str],
    tiny_model: Path,
    replay: Replay,
    gateway: KernelGateway,
    tmp_path: Path,
) -> None:
    path = replay(code("import time\nprint('started', flush=True)\ntime.sleep(600)"), final("no"))
    child = _start_lmc(lmc_env, tiny_model, path, gateway, tmp_path)
    try:
        lines = _read_until(child, "started")
        assert len(gateway.kernels()) == 1
        child.send_signal(signum)
    finally:
        rest, errors = _finish(child)
    assert child.returncode == 128 + signum, errors
    assert "Traceback" not in errors
    chunks = _chunks("".join(lines) + rest)
    assert chunks[-1].get("end") is True
    assert gateway.wait_for_kernels(0) == []


def test_a_gateway_killed_mid_session_is_reported_and_the_session_goes_on(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, tmp_path: Path
) -> None:
    own = start_kernel_gateway(tmp_path / "own")
    path = replay(
        code("import time\nprint('working', flush=True)\ntime.sleep(60)"),
        code("print(2)"),
        final("Carried on."),
    )
    try:
        child = _start_lmc(lmc_env, tiny_model, path, own, tmp_path)
        try:
            lines = _read_until(child, "working")
            own.kill()
        finally:
            rest, errors = _finish(child)
    finally:
        own.stop()
    assert child.returncode == 0, errors
    chunks = _chunks("".join(lines) + rest)
    text = _output(chunks)
    assert f"lost the connection to the kernel gateway at {own.url}" in text
    assert f"cannot reach the kernel gateway at {own.url}" in text
    answer = "".join(
        c["content"]
        for c in chunks
        if c["role"] == "assistant" and c["type"] == "message"
        if isinstance(c.get("content"), str)
    )
    assert answer == "Carried on."


def test_serve_with_an_unreachable_gateway_is_one_line_before_it_listens(
    lmc_env: dict[str, str], tiny_model: Path
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    server = Serving(lmc_env, "--port", "0", "-m", str(tiny_model), "--kernel-gateway", nowhere)
    try:
        assert server.process.wait(timeout=WAIT) == 1
    finally:
        server.stop()
    errors = stderr_of(server.process)
    [line] = errors.splitlines()
    assert line.startswith(f"lmc: error: cannot reach the kernel gateway at {nowhere}")


def test_doctor_checks_the_gateway_the_token_and_the_languages(
    lmc_env: dict[str, str], gateway: KernelGateway
) -> None:
    env = {**lmc_env, "LMC_KERNEL_GATEWAY_TOKEN": gateway.token}
    result = _invoke(env, "doctor", "--kernel-gateway", gateway.url)
    section = result.stdout.split("kernel gateway", 1)[1].splitlines()
    assert f"  ✓ gateway      {gateway.url} answers" in section
    assert "  ✓ token        set (from LMC_KERNEL_GATEWAY_TOKEN)" in section
    assert "  ✓ python       kernelspec python3" in section
    specs = "broken (python), lmc_javascript (javascript), lmc_shell (bash), python3 (python)"
    assert f"  ✓ kernelspecs  {specs}" in section
    refused = _invoke(
        {**env, "LMC_KERNEL_GATEWAY_TOKEN": "wrong"}, "doctor", "--kernel-gateway", gateway.url
    )
    assert refused.exit_code == 1
    assert f"  ✗ gateway      the kernel gateway at {gateway.url} refused the token" in (
        refused.stdout
    )


def _ask(ws: Any, token: str, message: str) -> list[dict[str, Any]]:
    ws.send(json.dumps({"auth": token}))
    assert json.loads(ws.recv(timeout=WAIT)) == {"auth": True}
    ws.send(json.dumps({"role": "user", "type": "message", "content": message}))
    chunks: list[dict[str, Any]] = []
    while not chunks or chunks[-1].get("content") != "complete":
        chunks.append(json.loads(ws.recv(timeout=WAIT)))
    return chunks


def test_serve_gives_each_connection_its_own_remote_kernels(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, gateway: KernelGateway
) -> None:
    path = replay(
        code("who = 'first'\nprint(who)"),
        final("set"),
        code("print('who' in globals())"),
        final("checked"),
    )
    env = {**lmc_env, "LMC_KERNEL_GATEWAY_TOKEN": gateway.token}
    server = Serving(
        env, "--port", "0", "-m", str(tiny_model), "--replay", str(path), "-y",
        "--kernel-gateway", gateway.url,
    )  # fmt: skip
    try:
        base, token = server.printed_url().split("?token=")
        ws_url = base.replace("http://", "ws://")
        with connect(ws_url, open_timeout=WAIT) as one, connect(ws_url, open_timeout=WAIT) as two:
            assert _output(_ask(one, token, "set who")) == "first\n"
            assert _output(_ask(two, token, "is who set?")) == "False\n"
            assert len(gateway.kernels()) == 2  # one per connection, on the gateway
        assert gateway.wait_for_kernels(0) == []  # deleted as each connection closed
    finally:
        assert server.stop() == 0
    assert gateway.wait_for_kernels(0) == []
