"""Benchmarks for lmc.computer, printed side by side with their baselines.

    PYTHONPATH=. .venv/bin/python scripts/bench_computer.py [active|roundtrip|startup ...]

active     A CPU-bound loop in the Python kernel: lmc's active-line tracking against no
           tracking (plain ipykernel) and against Open Interpreter's approach, reimplemented
           here: a ``print("##active_line N##")`` injected before every statement and parsed
           back out of stdout. Target: lmc within 1.05x of none.
roundtrip  ``print(1)`` on a warm kernel, from ``run()`` to the console end flag, median of
           100 runs. Target: under 10 ms (python, shell).
startup    Cold start of each kernel, and the first run's latency with and without
           ``prestart`` while a model would be generating.
"""

from __future__ import annotations

import ast
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

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
    print("  (target: under 10 ms for python and shell)")


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


def main(argv: list[str]) -> None:
    chosen = argv or list(BENCHES)
    for name in chosen:
        if name not in BENCHES:
            raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
    for name in chosen:
        BENCHES[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
