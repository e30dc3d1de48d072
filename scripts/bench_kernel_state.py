"""The cost of keeping the python kernel's state: per block, with it and without it.

    PYTHONPATH=. .venv/bin/python scripts/bench_kernel_state.py [BLOCKS]

A session's typical namespace (numpy arrays of 8 MB and 80 MB, a 10,000-item list, a dict,
50 small values, functions, a class and its instances, modules) is made once; then each
block changes one small value. Prints the median wall time per block with and without
kernel state (two computers, blocks alternating between them so that load on the machine
hits both alike), and their difference: what keeping the state costs a block.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lmc.computer import Computer
from lmc.computer.state import KernelState

SETUP = (
    """
import numpy as np, json, math
medium = np.random.rand(1_000_000)
large = np.random.rand(10_000_000)
items = list(range(10_000))
table = {str(i): i * 1.5 for i in range(1000)}
"""
    + "\n".join(f"v{i} = {i}" for i in range(50))
    + """
def helper(n):
    return n * math.pi
class Point:
    def __init__(self, x):
        self.x = x
points = [Point(i) for i in range(100)]
counter = 0
"""
)


def per_block(computer: Computer, blocks: int) -> list[float]:
    times = []
    for _ in range(blocks):
        started = time.perf_counter()
        for _chunk in computer.run("python", "counter += 1"):
            pass
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        state = KernelState(Path(tmp) / "kernel-state" / "bench", max_value=1 << 30)
        with Computer(workdir=work) as plain, Computer(workdir=work, state=state) as kept:
            for computer in (plain, kept):
                for _chunk in computer.run("python", SETUP):
                    pass
                per_block(computer, 3)  # warm
            times: dict[str, list[float]] = {"without": [], "with": []}
            for _ in range(blocks):
                times["without"] += per_block(plain, 1)
                times["with"] += per_block(kept, 1)
            manifest = json.loads((state.folder / "python" / "manifest.json").read_text())
        results = {label: statistics.median(values) for label, values in times.items()}
        print(f"{len(manifest['kept'])} values kept, {blocks} blocks each")
        print(f"wall time per block without kernel state: {results['without'] * 1000:.2f} ms")
        print(f"wall time per block with kernel state:    {results['with'] * 1000:.2f} ms")
        print(f"difference: {(results['with'] - results['without']) * 1000:+.2f} ms")


if __name__ == "__main__":
    main()
