"""Finding a test's processes from outside, also when they run in a sandbox's PID namespace
(where ``$!`` is not the pid the host sees): by a command line no other process has."""

from __future__ import annotations

import secrets
import time
from pathlib import Path


def unique_seconds(whole: int) -> str:
    """A ``sleep`` duration no other process on the machine is using."""
    return f"{whole}.{secrets.randbelow(10**8):08d}"


def pids_of(*argv: str) -> list[int]:
    """Live (not zombie) processes whose command line is exactly ``argv``."""
    wanted = ("\0".join(argv) + "\0").encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cmdline").read_bytes() != wanted:
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(proc.name))
    return found


def wait_until_gone(*argv: str, timeout: float = 30.0) -> bool:
    """Whether every process running ``argv`` ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while pids_of(*argv):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_until_running(*argv: str, timeout: float = 30.0) -> bool:
    """Whether a process running ``argv`` appeared within ``timeout`` seconds (a forked
    shell shows its own command line until it has exec'd the program)."""
    deadline = time.monotonic() + timeout
    while not pids_of(*argv):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _parents() -> dict[int, int]:
    """Every live (not zombie) process's parent, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int) -> set[int]:
    """``pid``'s live children, their children, and so on."""
    parents = _parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` is alive; return those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        alive = pids & set(_parents())
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
