"""Open Interpreter's own active-line tracking, timed on the loop ``bench_computer.py active``
runs, for the README's side-by-side figure.

Run it with a Python that has Open Interpreter installed (it is not one of lmc's
dependencies), in a throwaway virtualenv::

    python3 -m venv /tmp/oi && /tmp/oi/bin/pip install open-interpreter
    /tmp/oi/bin/python scripts/bench_open_interpreter.py [ITERATIONS]

It drives Open Interpreter's ``JupyterLanguage`` (the class its ``computer.run("python")``
uses) on the same CPU-bound loop twice: as shipped (a ``print("##active_line N##")``
injected before every statement, parsed back out of stdout) and with its documented switch
``INTERPRETER_ACTIVE_LINE_DETECTION=False`` (no markers: the baseline, in the same kernel
and the same output loop). The ratio is what its tracking costs.
"""

from __future__ import annotations

import importlib
import os
import statistics
import sys
import time
from typing import Any

LOOP = "total = 0\nfor i in range({n}):\n    total += i * i\n"


class _Computer:
    """The few attributes JupyterLanguage reads from its Computer."""

    verbose = False
    import_computer_api = False
    offline = True

    def __getattr__(self, name: str) -> Any:
        return None


def _timed(language: Any, code: str) -> float:
    started = time.perf_counter()
    for _chunk in language.run(code):
        pass
    return time.perf_counter() - started


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 5_000_000
    # Imported by name: Open Interpreter lives in its own virtualenv, not in lmc's.
    module: Any = importlib.import_module(
        "interpreter.core.computer.terminal.languages.jupyter_language"
    )
    language = module.JupyterLanguage(_Computer())
    code = LOOP.format(n=n)
    try:
        os.environ["INTERPRETER_ACTIVE_LINE_DETECTION"] = "False"
        _timed(language, code)  # warm up
        nones = [_timed(language, code) for _ in range(3)]
        os.environ["INTERPRETER_ACTIVE_LINE_DETECTION"] = "True"
        markers = _timed(language, code)  # once: it is slow
    finally:
        language.terminate()
    none = statistics.median(nones)
    print(f"\nOpen Interpreter's active-line tracking: CPU-bound loop of {n:,} iterations")
    print(f"  {'tracking':<40} {'seconds':>9} {'vs none':>8}")
    print(f"  {'none (INTERPRETER_ACTIVE_LINE_DETECTION)':<40} {none:>9.3f} {1:>7.2f}x")
    print(f"  {'as shipped (##active_line## prints)':<40} {markers:>9.3f} {markers / none:>7.2f}x")
    print("  (none: median of 3; as shipped: one run)")


if __name__ == "__main__":
    main(sys.argv[1:])
