"""Fixtures for the computer tests: real kernels, one shared Computer where state can leak."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc.computer import Computer


@pytest.fixture(scope="module")
def computer() -> Iterator[Computer]:
    """One Computer per test module: kernels start once, tests share them."""
    with Computer() as shared:
        yield shared
