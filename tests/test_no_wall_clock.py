"""Tests assert behaviour, never how long it took: a loaded machine makes a timed assert
flaky, and the benchmarks in scripts/ measure time. A wait may still have a deadline."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns"}


class _Clocks:
    """How one file reads the clock: ``time.monotonic()`` (also ``import time as t``),
    ``monotonic()`` after ``from time import monotonic`` (also ``as m``), and the names that
    hold a reading (``start = time.monotonic()``) or a difference of readings."""

    def __init__(self, tree: ast.AST) -> None:
        self.modules = {"time"}
        self.functions: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                self.modules |= {a.asname for a in node.names if a.name == "time" and a.asname}
            elif isinstance(node, ast.ImportFrom) and node.module == "time":
                self.functions |= {a.asname or a.name for a in node.names if a.name in CLOCKS}
        self.readings: set[str] = set()
        self.durations: set[str] = set()
        assignments = [node for node in ast.walk(tree) if isinstance(node, ast.Assign)]
        for _ in range(3):  # a reading copied, a difference of copies: a few rounds suffice
            for node in assignments:
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                if self.subtracts(node.value):
                    self.durations |= names
                elif self.reads(node.value):
                    self.readings |= names

    def _is_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in self.functions
        return (
            isinstance(func, ast.Attribute)
            and func.attr in CLOCKS
            and isinstance(func.value, ast.Name)
            and func.value.id in self.modules
        )

    def reads(self, node: ast.AST) -> bool:
        """``node`` calls a clock or uses a name that holds a reading."""
        return any(
            self._is_call(part) or (isinstance(part, ast.Name) and part.id in self.readings)
            for part in ast.walk(node)
        )

    def subtracts(self, node: ast.AST) -> bool:
        """``node`` holds a difference of which one side reads the clock."""
        return any(
            isinstance(part, ast.BinOp) and isinstance(part.op, ast.Sub) and self.reads(part)
            for part in ast.walk(node)
        )


def _timed_asserts(tree: ast.AST) -> list[int]:
    """Lines of asserts on a clock reading minus another (``elapsed < 2``), directly, through
    names that hold readings (``end - start``) or through a name that holds a difference."""
    clocks = _Clocks(tree)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        names = {part.id for part in ast.walk(node.test) if isinstance(part, ast.Name)}
        if clocks.subtracts(node.test) or names & clocks.durations:
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


def test_the_check_sees_imported_clocks_aliases_and_two_step_timing() -> None:
    cases = {
        "from time import monotonic\ns = monotonic()\nassert monotonic() - s < 2\n": [3],
        "from time import perf_counter as pc\ns = pc()\nassert pc() - s < 2\n": [3],
        "import time as t\ns = t.time()\nassert t.time() - s < 2\n": [3],
        "start = time.monotonic()\nend = time.monotonic()\nassert end - start < 2\n": [3],
        "from time import monotonic\na = monotonic()\nb = monotonic()\nd = b - a\nassert d < 1\n": [
            5
        ],
        "a = time.monotonic()\nb = a\nassert time.monotonic() - b < 1\n": [3],
        # not timing: a deadline handed on, positions subtracted, an unrelated monotonic()
        "deadline = time.monotonic() + 5\nassert wait(deadline)\n": [],
        "start, end = 3, 7\nassert end - start == 4\n": [],
        "s = monotonic()\nassert monotonic() - s < 2\n": [],  # not time's
    }
    for source, lines in cases.items():
        assert _timed_asserts(ast.parse(source)) == lines, source
