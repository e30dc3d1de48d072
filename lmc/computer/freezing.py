"""Stopping every process of the session's code while lmc's own process works on its files.

Undo in the chat runs while kernels are alive, and a background process the code left (a
loop swapping a folder for a link) could race each removal and write. Before undo touches a
file, every process under the kernels is sent SIGSTOP, again and again until a pass finds no
new one (a fork between the listing and the signal is caught by the next pass) and each is
seen stopped; afterwards they get SIGCONT. In the sandbox the kernels run in their own pid
namespace, so what the code forks, even a setsid or double-forked daemon, stays a
descendant of the kernel's process and is reached. (A cgroup freezer would do the same; it
is not there in every setting lmc runs in, and SIGSTOP is.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

__all__ = ["descendants", "frozen"]

_PROC: Final = Path("/proc")
#: How long to wait for the processes to show as stopped (a process in the middle of a
#: system call stops when it returns; one in uninterruptible sleep later).
_STOP_WAIT: Final = 5.0
_PASSES: Final = 50


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for tasks in _PROC.glob(f"{pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            out.extend(int(child) for child in tasks.read_text().split())
    return out


def descendants(roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them, as /proc shows them now."""
    seen: set[int] = set()
    todo = [pid for pid in roots if pid != os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in seen or pid == os.getpid():
            continue
        seen.add(pid)
        todo.extend(_children(pid))
    return seen


def _state(pid: int) -> str | None:
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None  # gone
    return text.rsplit(")", 1)[-1].split()[0]


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)


def _stop_all(roots: list[int], stopped: set[int]) -> None:
    for _ in range(_PASSES):
        fresh = descendants(roots) - stopped
        if not fresh:
            return
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh


def _wait_stopped(pids: set[int]) -> None:
    deadline = time.monotonic() + _STOP_WAIT
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        waiting = {p for p in waiting if _state(p) not in (None, "T", "t", "Z", "X")}
        if waiting:
            time.sleep(0.005)


@contextlib.contextmanager
def frozen(roots: Iterable[int]) -> Iterator[set[int]]:
    """Every process under ``roots`` stopped for the block (and resumed after it)."""
    stopped: set[int] = set()
    listed = list(roots)
    try:
        _stop_all(listed, stopped)
        _wait_stopped(stopped)
        _stop_all(listed, stopped)  # anything forked while the first ones were stopping
        yield stopped
    finally:
        for pid in stopped:
            _signal(pid, signal.SIGCONT)
