"""What starting one wrapper kernel (lmc_shell, lmc_javascript) costs, lean base against ipykernel.

For each kernel, runs interleaved: the kernels/ of this tree and of a baseline git revision
(by default a711c13, main before the lean base: its wrapper kernels subclass ipykernel's), each
started as lmc starts it (``python3 SCRIPT -f CONNECTION_FILE``, ZeroMQ ``ipc`` in a private
directory) and measured:

- ready: process start to the kernel_info reply with IOPub heard (lmc's own handshake:
  kernel_info, resent every 0.5 s until IOPub answers or welcomes);
- CPU: user + system time the kernel process spent until then;
- private memory: Private_* of smaps_rollup of the kernel process when ready (its bash/node
  child apart, on its own line: the same in both);
- first run: an ``execute_request`` (``echo 1`` / ``1``) to its reply, once ready.

    python scripts/bench_kernel_start.py [--runs 9] [--baseline REV] [--reconnect-ms 10]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
from bench_start import _private_kb
from jupyter_client.session import Session

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "a711c13"
KERNELS = {"lmc_shell": "echo 1", "lmc_javascript": "1"}
CHANNELS = {
    "shell": zmq.DEALER,
    "iopub": zmq.SUB,
    "stdin": zmq.DEALER,
    "control": zmq.DEALER,
    "hb": zmq.REQ,
}
TIMEOUT = 30.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    ready: float
    cpu: float
    memory_kb: int
    child_kb: int
    first_run: float


@dataclass
class Tree:
    name: str
    kernels: Path
    samples: dict[str, list[Sample]] = field(default_factory=dict)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


class Client:
    """A minimal Jupyter client on raw sockets (jupyter_client's Session signs)."""

    def __init__(self, info: dict[str, Any], reconnect_ms: int) -> None:
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.session = Session(key=info["key"].encode())
        self.sockets: dict[str, zmq.Socket[bytes]] = {}
        for name, kind in CHANNELS.items():
            socket = self.context.socket(kind)
            socket.linger = 0
            socket.setsockopt(zmq.RECONNECT_IVL, reconnect_ms)
            if kind == zmq.SUB:
                socket.setsockopt(zmq.SUBSCRIBE, b"")
            socket.connect(f"ipc://{info['ip']}-{info[f'{name}_port']}")
            self.sockets[name] = socket

    def send(self, msg_type: str, content: dict[str, Any]) -> str:
        message = self.session.msg(msg_type, content)
        self.session.send(self.sockets["shell"], message)
        return str(message["header"]["msg_id"])

    def receive(self, name: str, timeout: float) -> dict[str, Any] | None:
        socket = self.sockets[name]
        if not socket.poll(int(timeout * 1000)):
            return None
        _, frames = self.session.feed_identities(socket.recv_multipart())
        return self.session.deserialize(frames)

    def handshake(self, deadline: float) -> None:
        msg_id = self.send("kernel_info_request", {})
        replied = heard = False
        resend_at = time.monotonic() + 0.5
        while not (replied and heard):
            assert time.monotonic() < deadline, "the kernel did not answer kernel_info"
            reply = self.receive("shell", 0.005)
            replied = replied or (reply is not None and reply["parent_header"]["msg_id"] == msg_id)
            while (message := self.receive("iopub", 0)) is not None:
                welcome = message["msg_type"] == "iopub_welcome"
                heard = heard or welcome or message["parent_header"].get("msg_id") == msg_id
            if not heard and time.monotonic() >= resend_at:
                msg_id, replied = self.send("kernel_info_request", {}), False
                resend_at = time.monotonic() + 0.5

    def execute(self, code: str, deadline: float) -> None:
        msg_id = self.send("execute_request", {"code": code, "silent": False})
        while True:
            assert time.monotonic() < deadline, "no execute_reply"
            reply = self.receive("shell", 0.05)
            if reply is not None and reply["parent_header"]["msg_id"] == msg_id:
                return

    def shutdown(self) -> None:
        message = self.session.msg("shutdown_request", {"restart": False})
        self.session.send(self.sockets["control"], message)
        for socket in self.sockets.values():
            socket.close()
        self.context.term()


def _connection(directory: Path) -> dict[str, Any]:
    return {
        "transport": "ipc",
        "ip": str(directory / "kernel"),
        "key": secrets.token_hex(16),
        "signature_scheme": "hmac-sha256",
        **{f"{name}_port": port for port, name in enumerate(CHANNELS, start=1)},
    }


def measure(kernels: Path, name: str, code: str, reconnect_ms: int) -> Sample:
    with tempfile.TemporaryDirectory(prefix="lmc-bench-kernel-") as scratch:
        directory = Path(scratch)
        directory.chmod(0o700)
        info = _connection(directory)
        connection = directory / "connection.json"
        connection.write_text(json.dumps(info))
        script = next((kernels / name).glob("*_kernel.py"))
        client = Client(info, reconnect_ms)
        start = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, str(script), "-f", str(connection)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            client.handshake(start + TIMEOUT)
            ready = time.monotonic() - start
            cpu = _cpu(process.pid)
            memory = _private_kb(process.pid)
            child = sum(_private_kb(pid) for pid in _children(process.pid))
            before = time.monotonic()
            client.execute(code, before + TIMEOUT)
            first_run = time.monotonic() - before
        finally:
            client.shutdown()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
    return Sample(ready, cpu, memory, child, first_run)


def _baseline_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "kernels"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "kernels"


def _report(trees: list[Tree], runs: int) -> None:
    print(f"starting one wrapper kernel as lmc does; {runs} runs interleaved, medians")
    print(f"load average {os.getloadavg()[0]:.1f}; ratio = lean / baseline\n")
    print(f"{'':<34}{trees[0].name:>16}{trees[1].name:>16}{'ratio':>8}")
    metrics: list[tuple[str, Callable[[Sample], float], str]] = [
        ("ready (kernel_info + IOPub)", lambda s: s.ready * 1000, "ms"),
        ("CPU of the kernel until ready", lambda s: s.cpu * 1000, "ms"),
        ("private memory, kernel process", lambda s: s.memory_kb / 1024, "MiB"),
        ("private memory, its bash/node", lambda s: s.child_kb / 1024, "MiB"),
        ("first run to its reply", lambda s: s.first_run * 1000, "ms"),
    ]
    for name in KERNELS:
        print(name)
        for label, value, unit in metrics:
            old, new = (statistics.median(value(s) for s in tree.samples[name]) for tree in trees)
            ratio = f"{new / old:.2f}x" if old else "-"
            print(f"  {label:<32}{old:>12.1f} {unit:<3}{new:>12.1f} {unit:<3}{ratio:>8}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline", default=BASELINE, help="git revision of the old kernels")
    parser.add_argument(
        "--reconnect-ms",
        type=int,
        default=10,
        help="the client's ZeroMQ reconnect interval (10, as lmc's kernel sockets; ZeroMQ's"
        " default is 100); the client connects before the kernel binds",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lmc-bench-baseline-") as scratch:
        trees = [
            Tree(f"ipykernel {args.baseline}", _baseline_tree(args.baseline, Path(scratch))),
            Tree("lean (tree)", ROOT / "kernels"),
        ]
        for _ in range(args.runs):  # interleaved: load on the machine hits both alike
            for name, code in KERNELS.items():
                for tree in trees:
                    sample = measure(tree.kernels, name, code, args.reconnect_ms)
                    tree.samples.setdefault(name, []).append(sample)
    _report(trees, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
