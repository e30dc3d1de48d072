"""Benchmarks for lmc.computer, printed side by side with their baselines.

    PYTHONPATH=. .venv/bin/python scripts/bench_computer.py [active|roundtrip|startup ...]
    PYTHONPATH=. .venv/bin/python scripts/bench_computer.py roundtrip active --against ../old


active     A CPU-bound loop in the Python kernel: lmc's active-line tracking against no
           tracking (plain ipykernel) and against Open Interpreter's approach, reimplemented
           here: a ``print("##active_line N##")`` injected before every statement and parsed
           back out of stdout. Target: lmc within 1.05x of none.
roundtrip  ``print(1)`` on a warm kernel, from ``run()`` to the console end flag, median of
           100 runs. Target: <= 3.5 ms (python, shell).
startup    Cold start of each kernel, and the first run's latency with and without
           ``prestart`` while a model would be generating.

``--against CHECKOUT`` runs ``roundtrip`` and ``active`` side by side with another checkout of
lmc (an older commit in a ``git worktree``, same Python environment): each side runs in a
worker process of its own with its checkout first on ``PYTHONPATH``, the parent hands both
the same batches in turn (interleaved, so a noisy neighbour hits both alike) and prints the
medians and the ratio this/other. ``roundtrip`` then runs with the sandbox off and on
(workspace), 300 runs each; ``active`` gives each side's lmc/none ratio against the same
plain ipykernel. ``--this CHECKOUT`` puts another checkout in this one's place.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lmc.computer import Computer
from lmc.computer.kernel import KernelSession
from lmc.computer.kernelspecs import KernelSpec, kernel_spec

LOOP = "total = 0\nfor i in range({n}):\n    total += i * i\n"
LOOP_N = 5_000_000
OI_LOOP_N = 200_000  # OI's way prints once per iteration: far fewer iterations to stay sane
REPEATS = 9


def _plain_ipykernel() -> KernelSpec:
    """Stock ipykernel with no tracking: the 'none' baseline."""
    return KernelSpec(
        name="plain-ipykernel",
        argv=(sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"),
        language="python",
        resource_dir=Path(tempfile.gettempdir()),
    )


def _inject_active_line_prints(code: str) -> str:
    """Open Interpreter's rewrite: a marker print before every statement, at every depth."""

    class AddPrints(ast.NodeTransformer):
        def _marker(self, line: int) -> ast.stmt:
            return ast.parse(f'print("##active_line{line}##")').body[0]

        def _with_markers(self, body: list[ast.stmt]) -> list[ast.stmt]:
            out: list[ast.stmt] = []
            for statement in body:
                out.append(self._marker(statement.lineno))
                out.append(self.visit(statement))
            return out

        def generic_visit(self, node: ast.AST) -> ast.AST:
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    setattr(node, field, self._with_markers(body))
            return node

    tree = AddPrints().visit(ast.parse(code))
    return ast.unparse(ast.fix_missing_locations(tree))


def _timed_run(session: KernelSession, code: str, on_output: Callable[[str], None]) -> float:
    started = time.perf_counter()
    for event in session.execute(code):
        if isinstance(event, dict) and event["header"]["msg_type"] == "stream":
            on_output(event["content"]["text"])
    return time.perf_counter() - started


def _parse_markers(text: str) -> None:
    """What OI does with every piece of stdout: find and parse the marker lines."""
    for line in text.splitlines():
        if line.startswith("##active_line"):
            int(line[13:-2])


def bench_active_line() -> None:
    with tempfile.TemporaryDirectory(prefix="lmc-bench-") as runtime:
        _bench_active_line(Path(runtime))


def _bench_active_line(runtime: Path) -> None:
    lmc_kernel = KernelSession(kernel_spec("python"), runtime_dir=runtime)
    plain_kernel = KernelSession(_plain_ipykernel(), runtime_dir=runtime)
    for session in (lmc_kernel, plain_kernel):
        session.wait_ready()
    code = LOOP.format(n=LOOP_N)
    oi_code = _inject_active_line_prints(LOOP.format(n=OI_LOOP_N))
    nones: list[float] = []
    lmcs: list[float] = []
    try:
        _timed_run(plain_kernel, code, print)  # warm up both
        _timed_run(lmc_kernel, code, print)
        for _ in range(REPEATS):  # interleaved, so a noisy neighbour hits both alike
            nones.append(_timed_run(plain_kernel, code, print))
            lmcs.append(_timed_run(lmc_kernel, code, print))
        oi = _timed_run(plain_kernel, oi_code, _parse_markers) * LOOP_N / OI_LOOP_N
    finally:
        lmc_kernel.shutdown()
        plain_kernel.shutdown()
    none, lmc = statistics.median(nones), statistics.median(lmcs)
    pair = statistics.median(b / a for a, b in zip(nones, lmcs, strict=True))
    print(f"\nActive-line overhead: CPU-bound loop of {LOOP_N:,} iterations, median of {REPEATS}")
    print(f"  {'tracking':<34} {'seconds':>9} {'vs none':>8}")
    print(f"  {'none (plain ipykernel)':<34} {none:>9.3f} {1:>7.2f}x")
    print(f"  {'lmc (trace budget + sampler)':<34} {lmc:>9.3f} {lmc / none:>7.2f}x")
    oi_label = f"Open Interpreter markers (*{LOOP_N // OI_LOOP_N})"
    print(f"  {oi_label:<34} {oi:>9.3f} {oi / none:>7.2f}x")
    print(f"  median of the paired lmc/none ratios: {pair:.3f}x (target: <= 1.05x)")
    print(f"  (OI timed once on {OI_LOOP_N:,} iterations and scaled to {LOOP_N:,})")


def _roundtrip_ms(computer: Computer, language: str, runs: int = 100) -> list[float]:
    code = "print(1)" if language == "python" else "echo 1"
    for _ in range(5):  # warm up (and start the kernel)
        for _chunk in computer.run(language, code):
            pass
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for chunk in computer.run(language, code):
            if chunk.get("end"):
                times.append((time.perf_counter() - started) * 1000)
    return times


def _available(languages: Iterable[str]) -> list[str]:
    available = []
    for language in languages:
        try:
            spec_name = {"shell": "lmc_shell", "javascript": "lmc_javascript", "r": "r"}.get(
                language, language
            )
            kernel_spec(spec_name)
        except Exception as exc:
            print(f"  {language:<12} skipped: {exc}")
            continue
        available.append(language)
    return available


def bench_roundtrip() -> None:
    print("\nRound trip: print(1) / echo 1 on a warm kernel, run() to the end flag, 100 runs")
    print(f"  {'language':<12} {'median ms':>10} {'p90 ms':>8} {'min ms':>8}")
    with Computer() as computer:
        for language in _available(["python", "shell"]):
            times = sorted(_roundtrip_ms(computer, language))
            p90 = times[int(len(times) * 0.9)]
            print(
                f"  {language:<12} {statistics.median(times):>10.2f} {p90:>8.2f} {times[0]:>8.2f}"
            )
    print("  (target: <= 3.5 ms for python and shell)")


def bench_startup() -> None:
    print("\nCold start: start() to the kernel answering kernel_info (median of 3)")
    print(f"  {'kernel':<12} {'seconds':>8}")
    with tempfile.TemporaryDirectory(prefix="lmc-bench-") as runtime:
        _cold_starts(Path(runtime))
    _first_run_after_generation()


def _cold_starts(runtime: Path) -> None:
    names = {"python": "python", "shell": "lmc_shell", "javascript": "lmc_javascript", "r": "r"}
    for language in _available(names):
        samples = []
        for _ in range(3):
            session = KernelSession(kernel_spec(names[language]), runtime_dir=runtime)
            started = time.perf_counter()
            try:
                session.wait_ready()
                samples.append(time.perf_counter() - started)
            except Exception as exc:
                print(f"  {language:<12} failed: {exc}")
                break
            finally:
                session.shutdown()
        if samples:
            print(f"  {language:<12} {statistics.median(samples):>8.3f}")


def _first_run_after_generation() -> None:
    generation = 1.5  # seconds a model might spend writing the code block
    print(f"\nFirst python run after {generation:g} s of model generation (code ready -> end)")
    with Computer() as cold:
        time.sleep(generation)
        started = time.perf_counter()
        for _chunk in cold.run("python", "print(1)"):
            pass
        cold_s = time.perf_counter() - started
    with Computer() as warm:
        warm.prestart(["python"])
        time.sleep(generation)
        started = time.perf_counter()
        for _chunk in warm.run("python", "print(1)"):
            pass
        warm_s = time.perf_counter() - started
    print(f"  {'without prestart':<20} {cold_s * 1000:>9.1f} ms")
    print(f"  {'with prestart':<20} {warm_s * 1000:>9.1f} ms  ({cold_s / warm_s:.0f}x faster)")


BENCHES = {"active": bench_active_line, "roundtrip": bench_roundtrip, "startup": bench_startup}

# -- side by side with another checkout ---------------------------------------------------------

ROUNDTRIP_CODE = {"python": "print(1)", "shell": "echo 1"}
SIDE_RUNS = 300
SIDE_BATCH = 10
ACTIVE_KERNELS = 4
ACTIVE_RUNS = 3


class Worker:
    """One checkout's lmc in a process of its own, timing what it is asked to, over pipes."""

    def __init__(self, checkout: Path, sandbox: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.checkout = checkout
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", sandbox],
            cwd=checkout,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: object) -> dict[str, Any]:
        """``wall``: seconds of each of ``request['runs']`` runs; ``cpu``: CPU seconds of all
        of them, this worker's and its kernels'."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the worker for {self.checkout} ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def _serve_worker(sandbox: str) -> None:
    """The worker's side: JSON requests on stdin; per request, one line out with the seconds
    of each run and the CPU seconds the batch cost (this process and the kernels')."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # nothing else may reach the parent's pipe
    sessions: dict[str, KernelSession] = {}
    runtime = tempfile.TemporaryDirectory(prefix="lmc-bench-")
    with Computer(sandbox=sandbox) as computer:
        try:
            for line in sys.stdin:
                request = json.loads(line)
                code, runs = request["code"], request["runs"]
                if "session" in request:
                    session = _session(
                        sessions,
                        request["session"],
                        Path(runtime.name),
                        request.get("fresh", False),
                    )
                    tree = _process_tree(session.pid or 0)
                    cpu = _cpu_seconds(tree)
                    times = [_timed_run(session, code, _drop) for _ in range(runs)]
                else:
                    _computer_run(computer, request["language"], code)  # its kernel runs
                    tree = _process_tree(os.getpid())
                    cpu = _cpu_seconds(tree)
                    times = [
                        _computer_run(computer, request["language"], code) for _ in range(runs)
                    ]
                answer = {"wall": times, "cpu": _cpu_seconds(tree) - cpu}
                answers.write(json.dumps(answer) + "\n")
                answers.flush()
        finally:
            for session in sessions.values():
                session.shutdown()
            runtime.cleanup()


def _session(
    sessions: dict[str, KernelSession], kind: str, runtime: Path, fresh: bool = False
) -> KernelSession:
    if fresh and kind in sessions:
        sessions.pop(kind).shutdown()
    if kind not in sessions:
        spec = kernel_spec("python") if kind == "lmc" else _plain_ipykernel()
        sessions[kind] = KernelSession(spec, runtime_dir=runtime)
        sessions[kind].wait_ready()
    return sessions[kind]


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux: /proc; elsewhere just ``pid``)."""
    tree, at = [pid], 0
    while at < len(tree):
        for task in Path(f"/proc/{tree[at]}/task").glob("*/children"):
            try:
                tree += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
        at += 1
    return tree


def _cpu_seconds(pids: list[int]) -> float:
    """CPU time of every thread of ``pids`` so far, from the scheduler's nanosecond count
    (/proc/PID/task/TID/schedstat); 0 where it cannot be read."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(task.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total / 1e9


def _drop(text: str) -> None:
    pass


def _computer_run(computer: Computer, language: str, code: str) -> float:
    """``run()`` to the console end flag, in seconds."""
    started = time.perf_counter()
    ended = 0.0
    for chunk in computer.run(language, code):
        if chunk.get("end"):
            ended = time.perf_counter()
    return ended - started


def _interleaved(workers: dict[str, Worker], rounds: int, **request: object) -> dict[str, Sample]:
    """``rounds`` batches from each worker in turn, the order flipped every round."""
    samples = {name: Sample() for name in workers}
    names = list(workers)
    for number in range(rounds):
        for name in names if number % 2 == 0 else reversed(names):
            answer = workers[name].ask(**request)
            samples[name].wall += answer["wall"]
            samples[name].cpu += answer["cpu"]
    return samples


class Sample:
    """One side's runs: the wall time of each, the CPU time of all."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu = 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.wall) * 1000

    @property
    def cpu_ms(self) -> float:
        """CPU per run (this side's worker and kernels), milliseconds."""
        return self.cpu / len(self.wall) * 1000


def _load() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


def side_by_side_roundtrip(checkouts: dict[str, Path], modes: list[str]) -> None:
    print(f"\nRound trip side by side: run() to the end flag, warm kernel, median of {SIDE_RUNS}")
    print(f"  (batches of {SIDE_BATCH}, interleaved; load average {_load()})")
    this, other = checkouts
    print(f"  {this}   {other}")
    print("  wall: median ms of a run; cpu: CPU ms a run cost lmc's process and its kernels")
    print(f"  {'sandbox':<10} {'language':<9} {'this':>14} {'other':>14} {'wall':>6} {'cpu':>6}")
    for mode in modes:
        workers = {name: Worker(path, mode) for name, path in checkouts.items()}
        try:
            for language, code in ROUNDTRIP_CODE.items():
                warm = {"language": language, "code": code, "runs": 20}
                _interleaved(workers, 1, **warm)
                batch = {"language": language, "code": code, "runs": SIDE_BATCH}
                runs = _interleaved(workers, SIDE_RUNS // SIDE_BATCH, **batch)
                mine, theirs = runs[this], runs[other]
                print(
                    f"  {mode:<10} {language:<9}"
                    f" {mine.median_ms:>5.2f} ({mine.cpu_ms:>4.2f})"
                    f" {theirs.median_ms:>7.2f} ({theirs.cpu_ms:>4.2f})"
                    f" {mine.median_ms / theirs.median_ms:>5.2f}x"
                    f" {mine.cpu_ms / theirs.cpu_ms:>5.2f}x"
                )
        finally:
            for worker in workers.values():
                worker.close()
    print(f"  (ms of wall time, CPU ms in brackets; load average after: {_load()})")


def side_by_side_active(checkouts: dict[str, Path]) -> None:
    """Each side's lmc/none ratio over ``ACTIVE_KERNELS`` fresh kernels each: a tight loop's
    speed depends on the process it runs in (where its heap lies) by several percent, which
    one pair of kernels would take for the tracker's cost."""
    code = LOOP.format(n=LOOP_N)
    workers = {name: Worker(path, "off") for name, path in checkouts.items()}
    this = next(iter(checkouts))
    walls: dict[str, list[float]] = {name: [] for name in workers}
    cpus: dict[str, list[float]] = {name: [] for name in workers}
    none = Sample()
    try:
        for number in range(ACTIVE_KERNELS * ACTIVE_RUNS):
            fresh = number % ACTIVE_RUNS == 0
            plain = {"session": "plain", "code": code, "runs": 1, "fresh": fresh}
            tracked = {"session": "lmc", "code": code, "runs": 1, "fresh": fresh}
            if fresh:  # warm up new kernels
                for worker in workers.values():
                    worker.ask(**tracked)
                workers[this].ask(**plain)
                plain["fresh"] = tracked["fresh"] = False
            untracked = workers[this].ask(**plain)
            none.wall += untracked["wall"]
            none.cpu += untracked["cpu"]
            for name in list(workers) if number % 2 == 0 else reversed(list(workers)):
                answer = workers[name].ask(**tracked)
                walls[name].append(answer["wall"][0] / untracked["wall"][0])
                cpus[name].append(answer["cpu"] / untracked["cpu"])
    finally:
        for worker in workers.values():
            worker.close()
    runs = ACTIVE_KERNELS * ACTIVE_RUNS
    print(f"\nActive-line overhead side by side: {LOOP_N:,} iterations, median of {runs}")
    print(f"  ({ACTIVE_KERNELS} fresh kernels a side, {ACTIVE_RUNS} runs each, interleaved)")
    print(
        f"  none (plain ipykernel): {none.median_ms / 1000:.3f} s,"
        f" {none.cpu_ms / 1000:.3f} s of the kernel's CPU (load average {_load()})"
    )
    for name in workers:
        print(
            f"  {name:<18} lmc/none: wall {statistics.median(walls[name]):.3f}x,"
            f" kernel CPU {statistics.median(cpus[name]):.3f}x (target: <= 1.05x)"
        )


def _side_by_side(names: list[str], against: Path, sandbox: str, this: Path | None) -> None:
    here = (this or Path(__file__).resolve().parent.parent).resolve()
    for checkout in (here, against):
        if not (checkout / "lmc" / "computer").is_dir():
            raise SystemExit(f"{checkout} is not a checkout of lmc (no lmc/computer in it)")
    checkouts = {f"this: {_commit(here)}": here, f"other: {_commit(against)}": against.resolve()}
    modes = ["off", "workspace"] if sandbox == "both" else [sandbox]
    for name in names:
        if name == "roundtrip":
            side_by_side_roundtrip(checkouts, modes)
        elif name == "active":
            side_by_side_active(checkouts)
        else:
            raise SystemExit(f"--against runs roundtrip and active, not {name!r}")


def _commit(checkout: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.stdout.strip() or checkout.name


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="BENCHMARK", help=", ".join(BENCHES))
    parser.add_argument("--against", type=Path, help="another checkout of lmc, side by side")
    parser.add_argument("--this", type=Path, help="the checkout beside it (default: this one)")
    parser.add_argument("--sandbox", choices=["off", "workspace", "both"], default="both")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _serve_worker(args.worker)
        return
    chosen = args.names or (["roundtrip", "active"] if args.against else list(BENCHES))
    for name in chosen:
        if name not in BENCHES:
            raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    if args.against:
        _side_by_side(chosen, args.against, args.sandbox, args.this)
        return
    for name in chosen:
        BENCHES[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
