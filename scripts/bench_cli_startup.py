"""How long `lmc --help` and `lmc run --help` take, next to a bare `python -c pass`.

Runs each command interleaved (so machine load hits all alike) and prints medians and the
ratio to the baseline; also lists heavy modules the help path imported (there should be none).

    python scripts/bench_cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: pydantic is listed for information: typer validates option values with it.
HEAVY = (
    "pydantic",
    "rich",
    "prompt_toolkit",
    "llama_cpp",
    "jupyter_client",
    "zmq",
    "nbformat",
    "httpx",
)
BUDGET_S = 0.3


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _heavy_imports(args: list[str], env: dict[str, str]) -> list[str]:
    probe = (
        "import sys\n"
        f"sys.argv = ['lmc', *{args!r}]\n"
        "from lmc.cli.app import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "names = {m.split('.')[0] for m in sys.modules}\n"
        f"print('HEAVY:' + ' '.join(sorted(names & set({HEAVY!r}))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    marked = [line for line in result.stdout.splitlines() if line.startswith("HEAVY:")]
    return marked[-1].removeprefix("HEAVY:").split() if marked else ["(probe failed)"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "lmc --help": [sys.executable, "-m", "lmc", "--help"],
        "lmc run --help": [sys.executable, "-m", "lmc", "run", "--help"],
    }
    for argv in commands.values():  # warm the file cache and .pyc files
        _time(argv, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(_time(argv, env))
    base = statistics.median(samples["python -c pass"])
    print(f"{'command':<16} {'median':>9} {'min':>9} {'x baseline':>11}  ({runs} runs each)")
    worst = 0.0
    for name, values in samples.items():
        median = statistics.median(values)
        if name != "python -c pass":
            worst = max(worst, median)
        low = min(values) * 1000
        print(f"{name:<16} {median * 1000:>7.0f}ms {low:>7.0f}ms {median / base:>10.1f}x")
    for args in (["--help"], ["run", "--help"]):
        heavy = _heavy_imports(args, env)
        print(f"heavy modules imported by lmc {' '.join(args)}: {', '.join(heavy) or 'none'}")
    verdict = "within" if worst < BUDGET_S else "OVER"
    print(f"slowest help: {worst * 1000:.0f}ms, {verdict} the {BUDGET_S * 1000:.0f}ms budget")
    return 0 if worst < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
