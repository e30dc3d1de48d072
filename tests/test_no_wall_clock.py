"""Tests assert behaviour, never how long it took: a loaded machine makes a timed assert
flaky, and the benchmarks in scripts/ measure time. A wait may still have a deadline."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns"}


def _reads_the_clock(node: ast.AST) -> bool:
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in CLOCKS
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "time"
        for call in ast.walk(node)
    )


def _timed_asserts(tree: ast.AST) -> list[int]:
    """Lines of asserts on a clock reading minus another (``elapsed < 2``), directly or
    through a name that holds such a difference."""
    durations = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp)
        if isinstance(node.value.op, ast.Sub) and _reads_the_clock(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        differences = [
            part
            for part in ast.walk(node.test)
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Sub)
        ]
        names = {part.id for part in ast.walk(node.test) if isinstance(part, ast.Name)}
        if any(_reads_the_clock(part) for part in differences) or names & durations:
            lines.append(node.lineno)
    return lines


def test_no_test_asserts_how_long_something_took() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("test_*.py"))
        if "fixtures" not in path.relative_to(TESTS).parts
        for line in _timed_asserts(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_the_check_finds_a_timed_assert() -> None:
    timed = (
        "started = time.monotonic()\nrun()\nassert time.monotonic() - started < 2\n"
        "elapsed = time.perf_counter() - started\nassert elapsed < 1.5\n"
        "deadline = time.monotonic() + 5\nassert wait(deadline)\n"
    )
    assert _timed_asserts(ast.parse(timed)) == [3, 5]
