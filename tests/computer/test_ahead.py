"""A kernel launched ahead of its Computer (lmc.computer.ahead), with real kernels.

Checked from outside: the launched kernel is a live child process when :func:`launch_ahead`
returns; a Computer made with the same keywords takes it and runs code in it, and closing
that Computer ends it and removes its folder; a Computer made another way refuses it and shuts
it down; one never taken is shut down with its network namespace; nothing is launched for
an unknown language or a missing program.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import descendants, wait_gone

from lmc.computer import Computer
from lmc.computer.ahead import KernelAhead, launch_ahead
from lmc.computer.sandbox import find_tool
from lmc.computer.state import KernelState

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path: Path, short_tmpdir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory; the kernels' files under a short TMPDIR."""
    monkeypatch.setenv("TMPDIR", str(short_tmpdir))
    folder = tmp_path / "work"
    folder.mkdir()
    yield folder


def _output(computer: Computer, code: str) -> str:
    return "".join(str(chunk.get("content", "")) for chunk in computer.run("shell", code))


def _launched(**options: object) -> KernelAhead:
    ahead = launch_ahead("shell", **options)  # type: ignore[arg-type]
    assert ahead is not None
    assert ahead.session.pid is not None and ahead.session.pid in descendants(os.getpid())
    return ahead


@pytest.mark.parametrize("mode", ["off", "workspace"])
def test_a_computer_made_the_same_way_runs_code_in_the_kernel_launched_ahead(
    work: Path, mode: str
) -> None:
    if mode != "off" and not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    ahead = _launched(sandbox=mode, workdir=work)
    launched = descendants(os.getpid())
    computer = Computer(sandbox=mode, workdir=work)
    try:
        assert computer.adopt(ahead)
        assert computer._sessions["shell"] is ahead.session
        assert "made-ahead" in _output(computer, "echo made-ahead; pwd")
        assert str(work) in _output(computer, "pwd")
        assert ahead.runtime_dir.is_dir()
    finally:
        computer.close()
    assert wait_gone(launched, 60) == set()
    assert not ahead.runtime_dir.exists()


def test_a_computer_made_another_way_shuts_the_kernel_down_and_starts_its_own(
    work: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ahead = _launched(sandbox="off", workdir=work)
    launched = descendants(os.getpid())
    computer = Computer(sandbox="off", workdir=elsewhere)
    try:
        assert not computer.adopt(ahead)
        assert wait_gone(launched, 60) == set()
        assert not ahead.runtime_dir.exists()
        assert str(elsewhere) in _output(computer, "pwd")  # its own kernel, where it works
    finally:
        computer.close()


def test_a_computer_keeping_state_elsewhere_does_not_take_the_kernel(
    work: Path, tmp_path: Path
) -> None:
    ahead = _launched(sandbox="off", workdir=work, state=KernelState(tmp_path / "one"))
    with Computer(sandbox="off", workdir=work, state=KernelState(tmp_path / "two")) as computer:
        assert not computer.adopt(ahead)
        assert "own-state" in _output(computer, "echo own-state")


def test_a_computer_that_already_started_kernels_does_not_take_one(work: Path) -> None:
    with Computer(sandbox="off", workdir=work) as computer:
        assert "first" in _output(computer, "echo first")
        ahead = _launched(sandbox="off", workdir=work)
        pid = ahead.session.pid
        assert pid is not None
        assert not computer.adopt(ahead)
        assert wait_gone({pid}, 60) == set()


def test_a_kernel_never_taken_is_shut_down_with_its_network_namespace(work: Path) -> None:
    if not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    ahead = _launched(sandbox="workspace", workdir=work)
    assert ahead.network is not None
    launched = descendants(os.getpid())
    ahead.close()
    ahead.close()  # twice: nothing more
    assert wait_gone(launched, 60) == set()
    assert ahead.network.holder_pid is None or ahead.network.holder_pid not in descendants(
        os.getpid()
    )
    assert not ahead.runtime_dir.exists()


def test_nothing_is_launched_for_an_unknown_language_or_a_missing_program(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert launch_ahead("cobol", sandbox="off", workdir=work) is None
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no node here
    assert launch_ahead("javascript", sandbox="off", workdir=work) is None
    assert descendants(os.getpid()) == set()


def test_a_broken_install_launches_nothing_and_leaves_nothing(
    tmp_path: Path, short_tmpdir: Path
) -> None:
    """An install whose shell kernel spec is gone: nothing launched ahead, no session folder
    left, and no traceback (the Computer made later says what is missing)."""
    install = tmp_path / "install"
    no_caches = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "lmc", install / "lmc", ignore=no_caches)
    shutil.copytree(ROOT / "kernels", install / "lmc" / "_kernels", ignore=no_caches)
    (install / "lmc" / "_kernels" / "lmc_shell" / "kernel.json").unlink()
    work = tmp_path / "work"
    work.mkdir()
    code = (
        "import sys; from lmc.computer.ahead import launch_ahead; "
        "print(launch_ahead('shell', sandbox='off', workdir=sys.argv[1]))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code, str(work)],
        env={**os.environ, "PYTHONPATH": str(install), "TMPDIR": str(short_tmpdir)},
        cwd=tmp_path,  # not the checkout: its lmc would be imported instead
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (child.returncode, child.stdout.strip(), child.stderr) == (0, "None", "")
    assert list(short_tmpdir.rglob("s-*")) == []  # the session folder made for it is gone
