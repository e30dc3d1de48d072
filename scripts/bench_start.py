"""What one `lmc run` costs besides the model: start, steps, exit and memory, side by side.

A loopback server answers at once, as llama.cpp's server does (the same JSON and
server-sent events on ``/v1/models`` and ``/v1/completions``), so what is measured is lmc:

- answer: `lmc run -y` for a prompt answered without code (process start to exit);
- one shell block: the same with one shell call first (the shell kernel starts);
- per step: (11 shell steps - 1 shell step) / 10, what each further step adds;
- exit: from the last byte lmc printed to the end of the process;
- memory: the peak of the private memory (smaps_rollup) of lmc and its kernels together;
- CPU: the user + system time of lmc and the kernels it reaped (a machine's load inflates
  wall times; CPU time much less).

Each figure is a median over interleaved runs, next to a bare ``python -c pass`` and, with
``--against DIR``, another checkout of lmc (e.g. the main branch) run the same way:

    python scripts/bench_start.py [--runs 7] [--against /path/to/other/lmc] [--sandbox MODE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODEL_ID = "gpt-oss-20b"
STEPS = re.compile(r"steps=(\d+)")
CALL = "<|call|>"


def _completion(prompt: str) -> str:
    """The answer to a prompt that asks for ``steps=N``: N shell calls, then a final answer."""
    wanted = int(match.group(1)) if (match := STEPS.search(prompt)) else 0
    done = prompt.count(CALL)
    if done < wanted:
        return f"<|channel|>analysis to=shell code<|message|>echo step{done}"
    return "<|channel|>final<|message|>Done."


class _Handler(BaseHTTPRequestHandler):
    """llama.cpp's server, answering at once: the model list, a probe, streamed text."""

    def _json(self, status: int, value: Any) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/v1/models":
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "llamacpp"}
            self._json(200, {"object": "list", "data": [model]})
            return
        self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.split("?")[0] != "/v1/completions":
            self._json(404, {"error": {"code": 404, "message": "File Not Found"}})
            return
        if not body.get("stream"):  # a probe of one token
            choice = {"index": 0, "text": "<|channel|>", "finish_reason": "length"}
            self._json(200, {"object": "text_completion", "model": MODEL_ID, "choices": [choice]})
            return
        text = _completion(str(body.get("prompt", "")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece, finish in ((text, None), ("", "stop")):
            event = {"choices": [{"index": 0, "text": piece, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


def _private_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Private_"))


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo.extend(int(child) for child in task.read_text().split())
            except OSError:
                continue
    return found


@dataclass
class Run:
    total: float
    exit: float
    cpu: float = 0.0  # user + system seconds of lmc and the kernels it reaped
    memory_kb: int = 0
    output: str = ""


def _run(argv: list[str], env: dict[str, str], *, memory: bool = False) -> Run:
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], sum(_private_kb(p) for p in _tree(process.pid)))
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    if memory:
        sampler.start()
    assert process.stdout is not None and process.stderr is not None
    chunks: list[bytes] = []
    last = start
    while data := os.read(process.stdout.fileno(), 65536):
        chunks.append(data)
        last = time.perf_counter()
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)  # with the CPU time of lmc and its kernels
    process.returncode = os.waitstatus_to_exitcode(status)
    end = time.perf_counter()
    stop.set()
    if memory:
        sampler.join()
    output = b"".join(chunks).decode(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"{argv[-1]!r} failed ({process.returncode}): {err.decode()[-800:]}")
    return Run(end - start, end - last, usage.ru_utime + usage.ru_stime, peak[0], output)


@dataclass
class Tree:
    name: str
    env: dict[str, str]
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def lmc(self, url: str, prompt: str, sandbox: str | None) -> list[str]:
        extra = ["--sandbox", sandbox] if sandbox else []
        return [sys.executable, "-m", "lmc", "run", "-y", "--api-base", url, *extra, prompt]


def _env(tree: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMC_")}
    env.update(
        PYTHONPATH=str(tree),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        NO_COLOR="1",
    )
    return env


SCENARIOS: dict[str, str] = {
    "answer": "steps=0 say done",
    "one shell block": "steps=1 run echo",
    "eleven shell blocks": "steps=11 run echo",
}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _line(label: str, values: list[float], unit: Callable[[float], str]) -> str:
    return f"{label:<24}" + "".join(f"{unit(v):>20}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another lmc checkout to run alike")
    parser.add_argument("--sandbox", help="--sandbox for lmc (default: lmc's own default)")
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    with tempfile.TemporaryDirectory(prefix="lmc-bench-start-") as scratch:
        home = Path(scratch)
        # lmc runs in a project folder of its own, as a person's would be: not in the folder
        # holding the trees' data, which each block's checkpoint would read (the other tree's
        # growing conversation database and checkpoints made every run slower than the last).
        project = home / "project"
        project.mkdir()
        os.chdir(project)
        trees = [Tree("this tree", _env(ROOT, home / "a"))]
        if args.against is not None:
            trees.append(
                Tree(args.against.name or str(args.against), _env(args.against, home / "b"))
            )
        baseline: list[float] = []
        for _ in range(args.runs):  # interleaved: load on the machine hits every figure alike
            baseline.append(_run([sys.executable, "-c", "pass"], trees[0].env).total)
            for tree in trees:
                for name, prompt in SCENARIOS.items():
                    run = _run(tree.lmc(url, prompt, args.sandbox), tree.env)
                    tree.runs.setdefault(name, []).append(run)
        for tree in trees:  # memory apart: sampling /proc costs time
            for _ in range(3):
                run = _run(
                    tree.lmc(url, SCENARIOS["one shell block"], args.sandbox), tree.env, memory=True
                )
                tree.runs.setdefault("memory", []).append(run)
    server.shutdown()

    base = _median(baseline)
    print(f"lmc run -y against a loopback server that answers at once; {args.runs} runs, medians")
    print(f"baseline: python -c pass = {base * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}")
    print("(CPU: user + system time of lmc and its kernels, less sensitive to load)\n")
    print(f"{'':<24}" + "".join(f"{tree.name:>20}" for tree in trees))

    def seconds(value: float) -> str:
        return f"{value:.3f} s ({value / base:.1f}x)"

    figures: dict[str, list[float]] = {}
    for tree in trees:
        runs = tree.runs
        answer = _median([r.total for r in runs["answer"]])
        shell = _median([r.total for r in runs["one shell block"]])
        eleven = _median([r.total for r in runs["eleven shell blocks"]])
        exits = [r.exit for name in SCENARIOS for r in runs[name]]
        figures.setdefault("answer (fixed cost)", []).append(answer)
        figures.setdefault("one shell block", []).append(shell)
        figures.setdefault("each further step", []).append((eleven - shell) / 10)
        figures.setdefault("exit (median)", []).append(_median(exits))
        figures.setdefault("CPU, answer", []).append(_median([r.cpu for r in runs["answer"]]))
        figures.setdefault("CPU, one shell block", []).append(
            _median([r.cpu for r in runs["one shell block"]])
        )
        figures.setdefault("exit (worst)", []).append(max(exits))
        figures.setdefault("private memory, peak", []).append(
            max(r.memory_kb for r in runs["memory"]) / 1024
        )
    for label, values in figures.items():
        if label.startswith("private"):
            print(_line(label, values, lambda v: f"{v:.0f} MiB"))
        elif label.startswith(("each", "exit", "CPU")):
            print(_line(label, values, lambda v: f"{v * 1000:.0f} ms"))
        else:
            print(_line(label, values, seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
