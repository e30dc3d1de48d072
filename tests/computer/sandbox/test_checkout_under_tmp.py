"""lmc installed under /tmp (a CI clone, a wheel unpacked there): the sandbox's /tmp is
private, so the kernels' own files must be bound back in, the shared lmc_wrapper included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = """
from lmc.computer import Computer
with Computer(sandbox="workspace") as computer:
    for language, code in [("shell", "echo shell-ok"), ("javascript", "console.log('js-ok')"),
                           ("python", "print('python-ok')")]:
        print("".join(c.get("content") or "" for c in computer.run(language, code)
                      if c.get("format") == "output"), end="")
"""


def test_kernels_start_when_lmc_lives_under_tmp(tmp_path: Path) -> None:
    assert str(tmp_path).startswith("/tmp/")
    copy = tmp_path / "checkout"
    copy.mkdir()
    for part in ("lmc", "kernels"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["shell-ok", "js-ok", "python-ok"], done.stdout + done.stderr
