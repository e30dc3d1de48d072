"""Fixtures for the sandbox tests: a place on a real disk (not /tmp, which the sandbox
replaces with a private one) holding a working directory, a directory outside it and a test
HOME with a fake key; and Computers contained three ways, shared by the tests of a module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sandbox_testing import FAKE_KEY, NOTES, Place

from lmc.computer import Computer
from lmc.computer.sandbox import find_tool


def sandbox_works() -> bool:
    return find_tool().usable


@pytest.fixture(scope="module")
def place() -> Iterator[Place]:
    root = Path(tempfile.mkdtemp(prefix="lmc-sandbox-test-", dir="/var/tmp")).resolve()
    work, outside, home = root / "work", root / "outside", root / "home"
    for directory in (work, outside, home / ".ssh"):
        directory.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(FAKE_KEY + "\n")
    (home / "notes.txt").write_text(NOTES + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))  # the hidden paths are under this HOME
        yield Place(root, work, outside, home)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def contained(place: Place) -> Iterator[Computer]:
    """Workspace mode, no network."""
    if not sandbox_works():
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    with Computer(sandbox="workspace", workdir=place.work) as computer:
        yield computer


@pytest.fixture(scope="module")
def networked(place: Place) -> Iterator[Computer]:
    with Computer(sandbox="workspace", network=True, workdir=place.work) as computer:
        yield computer


@pytest.fixture(scope="module")
def uncontained(place: Place) -> Iterator[Computer]:
    with Computer(sandbox="off", workdir=place.work) as computer:
        yield computer
