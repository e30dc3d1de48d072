"""lmc.paths.host_which: the programs lmc's own process starts are never the code's.

With ``.`` or an empty entry in PATH (some people's shells have one), ``shutil.which`` resolves a
bare name against the current folder, which is the model's working directory: a ``./git`` the
code planted there would run on the host, unsandboxed, at the next checkpoint.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from lmc.paths import host_which
from lmc.workspace.shadow import ShadowRepo

LMC = Path(__file__).resolve().parents[1] / "lmc"


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a ``./git`` that leaves a marker, and '.' first in PATH."""
    work = tmp_path / "work"
    work.mkdir()
    fake = work / "git"
    fake.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran-on-the-host'}\n")
    fake.chmod(0o755)
    (work / "notes.txt").write_text("a\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", "." + ":" + str(Path(str(shutil.which("git"))).parent))
    return work


def test_a_planted_program_is_found_by_plain_which_but_not_by_host_which(planted: Path) -> None:
    assert shutil.which("git") == "./git"  # what lmc used to start
    found = host_which("git")
    assert found is not None and Path(found).resolve().parent != planted.resolve()


def test_a_checkpoint_never_runs_the_planted_git(planted: Path, tmp_path: Path) -> None:
    ShadowRepo(planted, tmp_path / "store").snapshot()
    assert not (tmp_path / "ran-on-the-host").exists()


def test_lmc_looks_programs_up_only_through_host_which() -> None:
    """A new ``shutil.which`` in lmc would bring the planted program back."""
    uses = [
        f"{path.relative_to(LMC)}:{number}"
        for path in LMC.rglob("*.py")
        if path.name != "paths.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bshutil\.which\(", line)
    ]
    assert uses == []
