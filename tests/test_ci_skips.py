"""On CI (``CI=true``) a skip for a missing tool or privilege fails; elsewhere it skips.
Run as a real pytest session over a small test file, with the suite's hook."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.ci_skips import refused_on_ci

SUPPORT = Path(__file__).resolve().parent

TESTS = """
import pytest

def test_tool():
    pytest.skip("tmux is not installed")

@pytest.mark.skipif(True, reason="the 'off' side needs root")
def test_root():
    pass

@pytest.mark.skipif(True, reason="replaces osascript with a stand-in")
def test_platform():
    pass
"""


def _run(tmp_path: Path, ci: str | None) -> tuple[int, str]:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(SUPPORT)!r})\n"
        "from support.ci_skips import pytest_runtest_makereport  # noqa: F401\n"
    )
    (tmp_path / "test_skips.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout


def test_on_ci_a_missing_tool_or_root_fails_and_other_skips_stay(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "true")
    assert code == 1, out
    # A skipif mark skips in setup, so that one is reported as an error: both fail the run.
    assert "1 failed, 1 skipped, 1 error" in out, out
    assert "FAILED test_skips.py::test_tool - CI=true: a missing tool" in out
    assert "ERROR test_skips.py::test_root - CI=true: a missing tool" in out
    assert "SKIPPED [1] test_skips.py:11: replaces osascript with a stand-in" in out


def test_off_ci_they_skip(tmp_path: Path) -> None:
    code, out = _run(tmp_path, None)
    assert code == 0 and "3 skipped" in out, out


def test_the_reasons_the_suite_uses_are_recognised() -> None:
    ci = {"CI": "true"}
    for reason in ("tmux is not installed", "R is not installed (CI installs r-cran-irkernel)",
                   "node is not installed", "the 'off' side needs root"):  # fmt: skip
        assert refused_on_ci(reason, ci), reason
        assert not refused_on_ci(reason, {})
    assert not refused_on_ci("PR_SET_PDEATHSIG is Linux's", ci)
