"""``print(1)`` through a Jupyter Kernel Gateway against a local kernel, side by side.

    PYTHONPATH=. .venv/bin/python scripts/bench_gateway.py [RUNS]

Starts a real ``jupyter kernelgateway`` (from this venv, loopback, a token) and measures, for
``Computer(gateway=...)`` and a local ``Computer(sandbox="off")``:

start      the first run on a cold kernel (start-up + the run; for the gateway also its REST
           start, the websocket, and installing lmc's active-line tracker)
roundtrip  ``print(1)`` on the warm kernel, from ``run()`` to the console end flag, median
           and 90th percentile of RUNS (default 100), local and gateway runs interleaved

and prints the gateway's figures as ratios of the local ones. Loopback only: a real network
adds its round-trip time to every run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from lmc.computer import Computer
from lmc.computer.gateway import GatewayConfig

TOKEN = "bench-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_gateway(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    spec_dir = tmp / "data" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_PATH": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={port}",
            f"--KernelGatewayApp.auth_token={TOKEN}",
            "--KernelSpecManager.ensure_native_kernel=False",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/api", timeout=2)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    raise SystemExit("the kernel gateway did not start")


def _timed(computer: Computer, code: str) -> float:
    start = time.perf_counter()
    output = "".join(
        str(c.get("content")) for c in computer.run("python", code) if c.get("format") == "output"
    )
    elapsed = time.perf_counter() - start
    if output != "1\n":
        raise SystemExit(f"unexpected output: {output!r}")
    return elapsed


def _measure(local: Computer, remote: Computer, runs: int) -> list[tuple[float, float, float]]:
    """For each: (first run on a cold kernel, median, p90 of warm runs), in seconds; the
    warm runs interleaved, so that a busy machine weighs on both alike."""
    computers = (local, remote)
    firsts = [_timed(computer, "print(1)") for computer in computers]
    for _ in range(5):
        for computer in computers:
            _timed(computer, "print(1)")
    samples: list[list[float]] = [[], []]
    for _ in range(runs):
        for index, computer in enumerate(computers):
            samples[index].append(_timed(computer, "print(1)"))
    figures = []
    for first, taken in zip(firsts, samples, strict=True):
        taken.sort()
        figures.append((first, statistics.median(taken), taken[int(0.9 * (runs - 1))]))
    return figures


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory(prefix="lmc-bench-gateway-") as tmp:
        process, url = _start_gateway(Path(tmp))
        try:
            gateway = GatewayConfig(url, token=TOKEN)
            with Computer(sandbox="off") as local, Computer(gateway=gateway) as remote:
                here, there = _measure(local, remote, runs)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    print(f"print(1), {runs} warm runs each; gateway on loopback ({url})")
    print(f"{'':<22}{'local':>10}{'gateway':>10}{'ratio':>8}")
    names = ("cold start + run", "warm median", "warm p90")
    for name, a, b in zip(names, here, there, strict=True):
        print(f"{name:<22}{a * 1000:>8.1f}ms{b * 1000:>8.1f}ms{b / a:>7.2f}x")


if __name__ == "__main__":
    main()
