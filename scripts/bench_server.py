"""What the websocket adds, and how ``lmc serve`` holds up under concurrent clients.

1. Latency per chunk: one long replayed answer (tiny model, real llama.cpp sampler) streamed
   through a real uvicorn on loopback to a real ``websockets`` client. Each chunk is stamped
   when the Interpreter yields it on the server and when the client receives it (one process,
   one clock): the difference is what the websocket adds; p50 and p99 are printed, with the
   turn's whole time in-process and through the websocket side by side.
2. N concurrent clients, each sending one message at once, against (a) the in-process model,
   where generations take turns, and (b) ``--api-base`` on a real ``python -m llama_cpp.server``
   serving the same tiny model, where each connection has its own backend. Wall time for all
   N against N times the time of one client alone (the ratio: <1 means they overlapped).

    python scripts/bench_server.py [--tokens 600] [--clients 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WAIT = 300.0
RUNS = 5


def _tiny_model(out: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_tiny_model", ROOT / "scripts" / "make_tiny_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_tiny_model"] = module
    spec.loader.exec_module(module)
    path: Path = module.write_tiny_model(out)
    return path


class _Stamped:
    """An Interpreter whose chunks are stamped with the time it yielded them."""

    def __init__(self, inner: Any, stamps: list[float]) -> None:
        self._inner = inner
        self._stamps = stamps

    def chat(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for chunk in self._inner.chat(*args, **kwargs):
            self._stamps.append(time.perf_counter())
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Live:
    def __init__(self, app: Any) -> None:
        import uvicorn

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"ws://127.0.0.1:{self._sock.getsockname()[1]}/"
        self.server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", ws_max_size=64 * 1024 * 1024)
        )
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        while not self.server.started:
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(WAIT)
        self._sock.close()


def _turn(url: str, token: str, text: str) -> tuple[list[float], list[dict[str, Any]]]:
    """One message through the websocket: (arrival time of each chunk, the chunks)."""
    from websockets.sync.client import connect

    times: list[float] = []
    chunks: list[dict[str, Any]] = []
    with connect(url, max_size=None, open_timeout=WAIT) as ws:
        ws.send(json.dumps({"auth": token}))
        json.loads(ws.recv(timeout=WAIT))
        ws.send(json.dumps({"role": "user", "type": "message", "content": text}))
        while True:
            chunk = json.loads(ws.recv(timeout=WAIT))
            times.append(time.perf_counter())
            chunks.append(chunk)
            if chunk == {"role": "server", "type": "status", "content": "complete"}:
                return times, chunks


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(model: Path, work: Path, tokens: int) -> None:
    from lmc.backends import BackendConfig, open_backend
    from lmc.backends.replay import format_replay
    from lmc.server import ServerConfig, create_app

    answer = " ".join(f"word{i}" for i in range(tokens // 3))
    final = f"<|channel|>final<|message|>{answer}<|return|>"
    replay = work / "latency.txt"
    replay.write_text(format_replay([final] * (2 * RUNS + 2)), encoding="utf-8")
    backend = open_backend(BackendConfig(model=str(model), replay=str(replay)))

    from lmc import Interpreter
    from lmc.computer import Computer

    # One computer, its kernel already started, for every turn: kernels starting and stopping
    # in the background would weigh on whichever side happened to run next.
    computer = Computer()
    computer.prestart(["python"])
    db = work / "lat.db"

    def make(conversation_id: str | None = None, view: Any = None) -> Any:
        return Interpreter(
            backend=view or backend, computer=computer, db_path=db, conversation_id=conversation_id
        )

    stamps: list[float] = []
    config = ServerConfig(
        token="bench",
        make_interpreter=lambda cid, b: _Stamped(make(cid, b), stamps),
        shared_backend=backend,
        db_path=work / "lat.db",
    )
    live = _Live(create_app(config))
    inproc: list[float] = []
    walls: list[float] = []
    added: list[float] = []
    count = 0
    try:
        # Interleaved, the first pair as warm-up: in-process (the baseline), then websocket.
        for run in range(RUNS + 1):
            interpreter = make()
            start = time.perf_counter()
            count = sum(1 for _ in interpreter.chat("hi", stream=True, display=False))
            elapsed = time.perf_counter() - start
            interpreter.close()
            stamps.clear()
            start = time.perf_counter()
            times, chunks = _turn(live.url, "bench", "hi")
            wall = time.perf_counter() - start
            if run == 0:
                continue
            inproc.append(elapsed)
            walls.append(wall)
            lmc_times = [t for t, c in zip(times, chunks, strict=True) if c["role"] != "server"]
            added += [(got - made) * 1000 for got, made in zip(lmc_times, stamps, strict=True)]
    finally:
        live.stop()
        backend.close()
        computer.close()
    base, ws = statistics.median(inproc), statistics.median(walls)
    print(f"latency: one answer of {count} chunks (tiny model, replay), loopback")
    print(f"  in-process turn        {base * 1000:8.1f} ms   (baseline, median of {RUNS})")
    print(f"  through the websocket  {ws * 1000:8.1f} ms   ({ws / base:.2f}x, incl. connect)")
    print(
        f"  added per chunk: p50 {_percentile(added, 0.5):.2f} ms, "
        f"p99 {_percentile(added, 0.99):.2f} ms, max {max(added):.2f} ms"
    )


def _llama_server(model: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "8192", "--verbose", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while True:
        try:
            if httpx.get(f"{base}/v1/models", timeout=1).status_code == 200:
                return process, f"{base}/v1"
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("llama_cpp.server did not start")
        time.sleep(0.1)


def _concurrent(url: str, clients: int) -> tuple[float, int]:
    """Wall time for ``clients`` clients sending at once; how many saw 'queued'."""
    results: list[list[dict[str, Any]]] = []
    threads = [
        threading.Thread(target=lambda: results.append(_turn(url, "bench", "hi")[1]))
        for _ in range(clients)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    wall = time.perf_counter() - start
    assert len(results) == clients, "a client did not finish"
    queued = sum(any(c.get("content") == "queued" for c in r) for r in results)
    return wall, queued


def concurrency(model: Path, work: Path, clients: int, tokens: int) -> None:
    from lmc.backends import BackendConfig, open_backend
    from lmc.backends.replay import format_replay
    from lmc.cli.session import make_interpreter
    from lmc.config import Settings
    from lmc.server import ServerConfig, create_app

    print(f"\nconcurrency: {clients} clients at once, one message each, {tokens} tokens per answer")
    answer = " ".join(f"word{i}" for i in range(tokens // 3))
    replay = work / "concurrent.txt"
    final = f"<|channel|>final<|message|>{answer}<|return|>"
    replay.write_text(format_replay([final] * ((clients + 1) * RUNS + 1)), encoding="utf-8")
    setups: list[tuple[str, Settings, Any]] = []
    inproc = Settings(model=str(model), replay=str(replay), db_path=str(work / "c1.db"))
    setups.append(("in-process model (turns)", inproc, open_backend(
        BackendConfig(model=str(model), replay=str(replay))
    )))  # fmt: skip
    process, api_base = _llama_server(model)
    remote = Settings(
        api_base=api_base, max_tokens=tokens, max_steps=1, db_path=str(work / "c2.db")
    )
    setups.append(("--api-base llama_cpp.server", remote, None))
    try:
        for name, settings, backend in setups:

            def factory(cid: str | None, view: Any, settings: Settings = settings) -> Any:
                return make_interpreter(settings, cid, backend=view)

            config = ServerConfig(
                token="bench",
                make_interpreter=factory,
                shared_backend=backend,
                db_path=settings.db_path,
            )
            live = _Live(create_app(config))
            try:
                _concurrent(live.url, 1)  # warm-up: model, prefix cache
                ones, walls, queued = [], [], 0
                for _ in range(RUNS):  # interleaved, so that load hits both alike
                    ones.append(_concurrent(live.url, 1)[0])
                    wall, queued = _concurrent(live.url, clients)
                    walls.append(wall)
                one, wall = statistics.median(ones), statistics.median(walls)
            finally:
                live.stop()
                if backend is not None:
                    backend.close()
            print(
                f"  {name:28s} 1 client {one:6.2f} s | {clients} clients {wall:6.2f} s "
                f"= {wall / (one * clients):.2f}x of {clients} in a row | queued: {queued}"
                f" (medians of {RUNS})"
            )
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        import os

        os.environ["LMC_CACHE_DIR"] = str(work / "cache")
        os.chdir(work)
        model = _tiny_model(work / "tiny.gguf")
        latency(model, work, args.tokens)
        concurrency(model, work, args.clients, args.tokens // 4)


if __name__ == "__main__":
    main()
