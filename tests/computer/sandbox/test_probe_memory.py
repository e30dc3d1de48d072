"""bubblewrap's probe remembered for the boot (lmc.computer.sandbox.probe_memory), for real.

A ``bwrap`` on PATH that writes a line to a log and then runs the real one shows from
outside when lmc probes: once, then not again while nothing changed; again when the binary
changes. A record planted for a bwrap that does not work fails closed: the kernel does not
start (the code does not run, contained or not), the record is forgotten, and the next
question probes and finds the truth. Planted links and junk are never trusted or written
through; ``lmc doctor``'s fresh probe ignores the memory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc.computer import Computer
from lmc.computer.sandbox import detect, find_tool, probe_memory
from lmc.computer.sandbox.bubblewrap import probe_command

REAL_BWRAP = shutil.which("bwrap")
#: A new process's question: does the sandbox work here?
ASK = "from lmc.computer.sandbox import find_tool; print(find_tool().usable)"


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache directory and no tool found yet in this process; the bin folder put
    first on PATH. What was found before comes back afterwards."""
    if REAL_BWRAP is None or not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    saved = dict(detect._cache)
    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path / "cache"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    detect._cache.clear()
    try:
        yield bin_dir
    finally:
        detect._cache.clear()
        detect._cache.update(saved)


def _shim(bin_dir: Path, body: str) -> Path:
    shim = bin_dir / "bwrap"
    shim.write_text(f"#!/bin/sh\n{body}\n")
    shim.chmod(0o755)
    return shim


def _logging_bwrap(bin_dir: Path) -> tuple[Path, Path]:
    log = bin_dir.parent / "bwrap-runs.log"
    return _shim(bin_dir, f'echo run >> "{log}"\nexec {REAL_BWRAP} "$@"'), log


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _ask_again() -> detect.SandboxTool:
    """What a new lmc process would find (this process's own answer dropped)."""
    detect._cache.clear()
    return find_tool()


def test_a_success_is_probed_once_and_then_remembered(fresh: Path) -> None:
    shim, log = _logging_bwrap(fresh)
    assert find_tool().usable and find_tool().path == str(shim)
    assert _runs(log) == 1
    record = Path(os.environ["LMC_CACHE_DIR"]) / "sandbox-probe.json"
    assert record.stat().st_mode & 0o777 == 0o600
    assert _ask_again().usable
    assert _runs(log) == 1  # remembered: not probed again


def test_a_changed_binary_is_probed_again(fresh: Path) -> None:
    shim, log = _logging_bwrap(fresh)
    assert find_tool().usable
    info = shim.stat()
    os.utime(shim, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    assert _ask_again().usable
    assert _runs(log) == 2


def test_without_the_memory_every_process_probes(fresh: Path) -> None:
    # The same questions with the memory unreadable: each one runs bwrap.
    _, log = _logging_bwrap(fresh)
    assert find_tool().usable
    (Path(os.environ["LMC_CACHE_DIR"]) / "sandbox-probe.json").unlink()
    assert _ask_again().usable
    assert _runs(log) == 2


def test_a_wrong_memory_fails_closed_and_is_forgotten(fresh: Path, tmp_path: Path) -> None:
    broken = _shim(fresh, 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1')
    probe_memory.remember(str(broken), probe_command(str(broken)))  # planted: "it works"
    assert _ask_again().usable  # believed...
    work = tmp_path / "work"
    work.mkdir()
    with Computer(sandbox="workspace", workdir=work) as computer:
        output = "".join(
            str(chunk.get("content", "")) for chunk in computer.run("shell", "touch ran-here")
        )
    assert "failed to start" in output or "sandbox is gone" in output, output
    assert not (work / "ran-here").exists()  # the code never ran, contained or not
    assert not (Path(os.environ["LMC_CACHE_DIR"]) / "sandbox-probe.json").exists()
    tool = _ask_again()  # ...and the next question finds the truth
    assert not tool.usable and "Permission denied" in str(tool.problem)


def test_a_record_for_another_machine_state_is_not_trusted(fresh: Path) -> None:
    broken = _shim(fresh, "exit 1")
    probe_memory.remember(str(broken), probe_command(str(broken)))
    record = Path(os.environ["LMC_CACHE_DIR"]) / "sandbox-probe.json"
    works = json.loads(json.loads(record.read_text())["works"])
    assert works["boot"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    works["boot"] = "0" * 32  # remembered in another boot
    record.write_text(json.dumps({"works": json.dumps(works, sort_keys=True)}))
    assert not _ask_again().usable


@pytest.mark.parametrize("junk", [b"", b"not json", b"\xff\xfe", b"[1, 2]", b"{}" + b" " * 9000])
def test_junk_in_the_record_is_no_memory(fresh: Path, junk: bytes) -> None:
    _, log = _logging_bwrap(fresh)
    folder = Path(os.environ["LMC_CACHE_DIR"])
    folder.mkdir()
    (folder / "sandbox-probe.json").write_bytes(junk)
    assert find_tool().usable
    assert _runs(log) == 1  # probed, not believed, nothing raised


def test_a_planted_link_is_neither_followed_nor_written_through(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _shim(fresh, "exit 1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    saved = Path(os.environ["LMC_CACHE_DIR"])
    # A valid record for the broken bwrap, reachable only through a link.
    monkeypatch.setenv("LMC_CACHE_DIR", str(elsewhere))
    probe_memory.remember(str(broken), probe_command(str(broken)))
    monkeypatch.setenv("LMC_CACHE_DIR", str(saved))
    saved.mkdir()
    target = elsewhere / "sandbox-probe.json"
    (saved / "sandbox-probe.json").symlink_to(target)
    before = target.read_bytes()
    assert not _ask_again().usable  # the link was not followed
    shutil.copy(REAL_BWRAP or "", fresh / "bwrap")  # now a working bwrap: its success is kept
    assert _ask_again().usable
    assert target.read_bytes() == before  # kept beside the link's target, not in it
    assert not (saved / "sandbox-probe.json").is_symlink()


def test_a_fresh_probe_ignores_the_memory(fresh: Path) -> None:
    broken = _shim(fresh, "exit 1")
    probe_memory.remember(str(broken), probe_command(str(broken)))
    assert _ask_again().usable
    assert not find_tool(fresh=True).usable  # lmc doctor's question


def test_a_fifo_planted_as_the_record_neither_blocks_nor_counts(fresh: Path) -> None:
    """A named pipe where the record goes: opened without blocking, not a regular file, so
    no memory (without O_NONBLOCK the open waits for a writer forever: every start hangs)."""
    _, log = _logging_bwrap(fresh)
    folder = Path(os.environ["LMC_CACHE_DIR"])
    folder.mkdir()
    os.mkfifo(folder / "sandbox-probe.json")
    child = subprocess.run(
        [sys.executable, "-c", ASK], capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (child.returncode, child.stdout.strip()) == (0, "True"), child.stderr
    assert _runs(log) == 1  # it probed


def test_a_linked_cache_folder_is_neither_read_nor_written_through(
    fresh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _shim(fresh, "exit 1")
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    victim.chmod(0o755)
    monkeypatch.setenv("LMC_CACHE_DIR", str(victim))
    probe_memory.remember(str(broken), probe_command(str(broken)))  # a record reachable only...
    link = tmp_path / "linked-cache"
    link.symlink_to(victim)  # ...through a planted link
    monkeypatch.setenv("LMC_CACHE_DIR", str(link))
    assert not _ask_again().usable  # not read through the link: probed, and bwrap fails
    victim.chmod(0o755)
    before = sorted(p.name for p in victim.iterdir())
    shutil.copy(REAL_BWRAP or "", fresh / "bwrap")
    assert _ask_again().usable  # a success now: nothing kept, nothing changed through the link
    assert sorted(p.name for p in victim.iterdir()) == before
    assert victim.stat().st_mode & 0o777 == 0o755


def test_a_process_confined_otherwise_probes_for_itself(fresh: Path) -> None:
    """The same user, namespaces and binary, but no_new_privs set: a service may be kept from
    what a login shell may do, so the memory of the unconfined process does not count."""
    setpriv = shutil.which("setpriv")
    assert setpriv is not None, "setpriv (util-linux) is needed"
    _, log = _logging_bwrap(fresh)
    assert find_tool().usable and _runs(log) == 1
    again = subprocess.run(
        [sys.executable, "-c", ASK], capture_output=True, text=True, timeout=60, check=True
    )
    assert again.stdout.strip() == "True" and _runs(log) == 1  # same confinement: remembered
    confined = subprocess.run(
        [setpriv, "--no-new-privs", sys.executable, "-c", ASK],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert confined.returncode == 0, confined.stderr
    assert _runs(log) == 2  # probed anew under its own confinement
