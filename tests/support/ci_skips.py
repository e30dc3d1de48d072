"""On CI a missing tool or privilege fails the test instead of skipping it.

Tests that need tmux, node, R, bash or root skip where those are missing, so that a
developer's machine runs what it can. CI (``CI=true``, set by .ci/run and by CI services)
installs every one of them and runs as root; there such a skip means a broken image, and a
run that skipped a hundred tests must not pass. The tests keep their plain ``pytest.skip``
and ``skipif``: this hook (registered in tests/conftest.py) turns the skip into a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Mapping
from typing import Any

import pytest

__all__ = ["MISSING", "on_ci", "pytest_runtest_makereport", "refused_on_ci"]

#: What the suite's skip reasons say when a tool or privilege is missing.
MISSING = re.compile(r"is not installed|needs root|not found on PATH")


def on_ci(environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def refused_on_ci(reason: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a skip for ``reason`` is a failure here."""
    return on_ci(environ) and MISSING.search(reason) is not None


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = _reason(report)
        if refused_on_ci(reason):
            report.outcome = "failed"
            report.longrepr = (
                f"CI=true: a missing tool or privilege fails here, not skips: {reason}"
            )
