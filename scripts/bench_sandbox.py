"""What the sandbox costs, side by side with the same kernels unsandboxed.

    PYTHONPATH=. .venv/bin/python scripts/bench_sandbox.py [roundtrip|startup|prestart ...]

roundtrip  ``print(1)`` / ``echo 1`` on a warm kernel, ``run()`` to the console end flag,
           sandboxed (workspace, no network) against off, interleaved batches, median of 200
           runs each. Target: sandboxed within 1.1x of off, both under 10 ms.
startup    Cold start, ``start()`` to the kernel answering, median of 5 interleaved pairs.
prestart   The first python run after 1.5 s of "model generation" with ``prestart``: the
           start-up hides behind it in both modes.

Both modes use the same transport (ZeroMQ ipc in a private directory), so the ratio is the
sandbox alone. Run it from a directory outside /tmp (the working directory is bound in).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from lmc.computer import Computer

MODES = ("off", "workspace")
LANGUAGES = {"python": "print(1)", "shell": "echo 1"}


def _run(computer: Computer, language: str, code: str) -> float:
    started = time.perf_counter()
    for _ in computer.run(language, code):
        pass
    return time.perf_counter() - started


def _row(name: str, samples: dict[str, list[float]], unit: float, label: str) -> None:
    medians = {mode: statistics.median(samples[mode]) * unit for mode in MODES}
    p90 = {mode: statistics.quantiles(samples[mode], n=10)[-1] * unit for mode in MODES}
    ratio = medians["workspace"] / medians["off"]
    print(
        f"{name:<8} off {medians['off']:8.2f} {label} (p90 {p90['off']:.2f})   "
        f"sandboxed {medians['workspace']:8.2f} {label} (p90 {p90['workspace']:.2f})   "
        f"ratio {ratio:.2f}x"
    )


def roundtrip(runs: int = 200, batch: int = 20) -> None:
    print(f"round trip, warm kernel, median of {runs} runs (batches of {batch}, interleaved)")
    computers = {mode: Computer(sandbox=mode) for mode in MODES}
    try:
        for language, code in LANGUAGES.items():
            samples: dict[str, list[float]] = {mode: [] for mode in MODES}
            for computer in computers.values():
                for _ in range(10):  # warm up
                    _run(computer, language, code)
            for _ in range(runs // batch):
                for mode, computer in computers.items():
                    samples[mode] += [_run(computer, language, code) for _ in range(batch)]
            _row(language, samples, 1000, "ms")
    finally:
        for computer in computers.values():
            computer.close()


def startup(repeats: int = 5) -> None:
    print(f"cold start, start() to kernel_info answered, median of {repeats}")
    for language in LANGUAGES:
        samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(repeats):
            for mode in MODES:
                with Computer(sandbox=mode) as computer:
                    started = time.perf_counter()
                    computer.start(language)
                    computer._sessions[language].wait_ready()
                    samples[mode].append(time.perf_counter() - started)
        _row(language, samples, 1, "s ")


def prestart(repeats: int = 3, generation: float = 1.5) -> None:
    print(f"first python run after {generation} s of generation, median of {repeats}")
    for use_prestart in (False, True):
        samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(repeats):
            for mode in MODES:
                with Computer(sandbox=mode) as computer:
                    if use_prestart:
                        computer.prestart(["python"])
                    time.sleep(generation)
                    samples[mode].append(_run(computer, "python", "print(1)"))
        _row("prestart" if use_prestart else "cold", samples, 1000, "ms")


BENCHES: dict[str, Callable[[], None]] = {
    "roundtrip": roundtrip,
    "startup": startup,
    "prestart": prestart,
}


def main(names: list[str]) -> None:
    for name in names or list(BENCHES):
        BENCHES[name]()
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
