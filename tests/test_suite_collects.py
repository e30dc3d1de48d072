"""``scripts/test [PYTEST ARGS]`` works for any choice of test directories.

Every test directory has a ``conftest.py`` and none is a package, so all of them are the
module ``conftest``: ``from conftest import X`` gets whichever was imported first. Helpers
live in the ``support`` package (``support.agent_testing``, ``support.backend_testing``, ...),
and test modules have names of their own too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_test_imports_from_a_conftest() -> None:
    offenders = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if re.search(r"^\s*(from conftest import|import conftest)", path.read_text(), re.M)
    ]
    assert offenders == []


def test_several_test_directories_collect_together() -> None:
    directories = sorted(str(p) for p in TESTS.iterdir() if p.is_dir() and p.name != "fixtures")
    collect = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*collect, *directories],  # tests/agent first, then others: the order that broke
        capture_output=True,
        text=True,
        cwd=TESTS.parent,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "error" not in result.stdout.splitlines()[-1]


def test_test_module_names_are_unique() -> None:
    """Two ``test_x.py`` in different directories are one module name: the second fails
    to import ("import file mismatch")."""
    names: dict[str, list[str]] = {}
    for path in TESTS.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
