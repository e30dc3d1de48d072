"""Limits on what sandboxed code may use: processes, memory, and the private /tmp and /dev/shm.

The sizes of /tmp and /dev/shm are bubblewrap's own (``--size`` on the tmpfs). Processes and
memory are a control group per kernel, from whichever this machine offers, in this order:
cgroup v1 (a ``pids`` and a ``memory`` hierarchy lmc may write, as root), a delegated
cgroup v2 subtree, ``systemd-run --user --scope`` where a user manager runs, and last
``RLIMIT_NPROC`` (which binds no process whose real uid is 0, and limits no memory). The
kernel joins its group before bubblewrap starts (a small ``sh`` writes its own pid into the
group), so nothing the code starts is ever outside it.

Memory in a tmpfs is charged to the group that wrote it, so the default memory limit leaves
room for a full /tmp and /dev/shm: filling /tmp ends in "no space left", not a killed kernel.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from lmc.paths import host_which
from lmc.settings import parse_size

__all__ = [
    "GIB",
    "CgroupBackend",
    "KernelLimits",
    "Limits",
    "find_backend",
    "parse_size",
    "process_ending",
]

MIB: Final = 1024**2
GIB: Final = 1024**3
_CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
_GROUP_PARENT: Final = "lmc"
#: Seconds to wait for a kernel's group to empty before leaving it to the next start.
_EMPTY_WAIT: Final = 2.0
#: Set once lmc's process is ending (:func:`process_ending`).
_ENDING: list[bool] = []


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 * GIB


def default_memory() -> int:
    """At least 4 GiB or half the RAM, whichever is more (room for /tmp and /dev/shm)."""
    return max(4 * GIB, _total_memory() // 2)


@dataclass(frozen=True)
class Limits:
    """What one kernel may use; a person raises them in config (``[sandbox]``)."""

    processes: int = 256
    memory: int = field(default_factory=default_memory)
    tmp_size: int = GIB
    shm_size: int = GIB

    @classmethod
    def chosen(
        cls,
        processes: int | None = None,
        memory: int | None = None,
        tmp_size: int | None = None,
        shm_size: int | None = None,
    ) -> Limits:
        """The defaults, with what the config raised or lowered (None: the default)."""
        given = {"processes": processes, "memory": memory, "tmp_size": tmp_size}
        given["shm_size"] = shm_size
        return cls(**{key: value for key, value in given.items() if value is not None})

    def describe(self) -> str:
        return (
            f"{self.processes} processes, {_size(self.memory)} memory, "
            f"/tmp {_size(self.tmp_size)}, /dev/shm {_size(self.shm_size)}"
        )


def _size(value: int) -> str:
    if value >= GIB:
        return f"{value / GIB:.1f}".removesuffix(".0") + " GiB"
    return f"{value / MIB:.0f} MiB"


Kind = Literal["cgroup-v1", "cgroup-v2", "systemd-run", "rlimit"]


@dataclass(frozen=True)
class CgroupBackend:
    """How limits are applied here (``kind``) and, for cgroups, where."""

    kind: Kind
    pids: Path | None = None  # v1: the pids hierarchy; v2: the delegated parent
    memory: Path | None = None  # v1 only

    def describe(self) -> str:
        return {
            "cgroup-v1": "cgroup v1 (pids + memory)",
            "cgroup-v2": f"cgroup v2 under {self.pids}",
            "systemd-run": "systemd-run --user --scope",
            "rlimit": "RLIMIT_NPROC only (no memory limit; not binding for root)",
        }[self.kind]

    @property
    def limits_memory(self) -> bool:
        return self.kind != "rlimit"


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def _v2_parent() -> Path | None:
    """A cgroup v2 directory lmc may create groups in (its own, delegated), if any."""
    if not (_CGROUP_ROOT / "cgroup.controllers").exists():
        return None
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    own = next((entry[3:] for entry in line if entry.startswith("0::")), None)
    if own is None:
        return None
    here = _CGROUP_ROOT / own.lstrip("/")
    parent = here.parent if here != _CGROUP_ROOT else here
    controllers = (parent / "cgroup.subtree_control").read_text().split() if parent.exists() else []
    if {"pids", "memory"} <= set(controllers) and _writable(parent):
        return parent
    return None


@functools.cache
def find_backend() -> CgroupBackend:
    """The best way to apply limits on this machine (stale groups removed on first use)."""
    backend = _find_backend()
    remove_stale_groups(backend)
    return backend


def _find_backend() -> CgroupBackend:
    pids_v1, memory_v1 = _CGROUP_ROOT / "pids", _CGROUP_ROOT / "memory"
    v1 = all((h / "cgroup.procs").exists() and _writable(h) for h in (pids_v1, memory_v1))
    if v1:
        return CgroupBackend("cgroup-v1", pids_v1, memory_v1)
    parent = _v2_parent()
    if parent is not None:
        return CgroupBackend("cgroup-v2", parent)
    if host_which("systemd-run") and os.environ.get("XDG_RUNTIME_DIR"):
        bus = Path(os.environ["XDG_RUNTIME_DIR"]) / "systemd" / "private"
        if bus.exists():
            return CgroupBackend("systemd-run")
    return CgroupBackend("rlimit")


_SH_JOIN: Final = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; shift; done; shift; exec "$@"'  # noqa: E501


@dataclass
class KernelLimits:
    """The limits of one kernel: the argv prefix that applies them, and the groups to
    remove when the kernel is gone."""

    backend: CgroupBackend
    limits: Limits
    groups: list[Path] = field(default_factory=list)
    oom_kills: int = 0

    def create(self) -> list[str]:
        """Make this kernel's groups; the argv prefix that puts the kernel in them."""
        kind, limits = self.backend.kind, self.limits
        if kind == "systemd-run":
            return [
                "systemd-run", "--user", "--scope", "--quiet", "--collect",
                "-p", f"TasksMax={limits.processes}", "-p", f"MemoryMax={limits.memory}",
                "-p", "MemorySwapMax=0", "--",
            ]  # fmt: skip
        if kind == "rlimit":
            prlimit = host_which("prlimit")
            return [] if prlimit is None else [prlimit, f"--nproc={limits.processes}", "--"]
        name = f"k-{os.getpid()}-{os.urandom(4).hex()}"
        if kind == "cgroup-v1":
            assert self.backend.pids is not None and self.backend.memory is not None
            pids = self._make(self.backend.pids, name)
            memory = self._make(self.backend.memory, name)
            (pids / "pids.max").write_text(str(limits.processes))
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
            with contextlib.suppress(OSError):  # no swap accounting: swap is not limited
                (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
            procs = [pids / "cgroup.procs", memory / "cgroup.procs"]
        else:
            assert self.backend.pids is not None
            group = self._make(self.backend.pids, name)
            (group / "pids.max").write_text(str(limits.processes))
            (group / "memory.max").write_text(str(limits.memory))
            with contextlib.suppress(OSError):
                (group / "memory.swap.max").write_text("0")
            procs = [group / "cgroup.procs"]
        return ["/bin/sh", "-c", _SH_JOIN, "lmc-limits", *map(str, procs), "--"]

    def _make(self, hierarchy: Path, name: str) -> Path:
        parent = hierarchy / _GROUP_PARENT
        parent.mkdir(exist_ok=True)
        group = parent / name
        group.mkdir()
        self.groups.append(group)
        return group

    def out_of_memory(self) -> bool:
        """Whether the memory limit killed a process since the last time it was asked."""
        kills = 0
        for group in self.groups:
            for name in ("memory.oom_control", "memory.events"):
                with contextlib.suppress(OSError, ValueError):
                    for line in (group / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            kills += int(value)
        new, self.oom_kills = kills > self.oom_kills, kills
        return new

    def remove(self) -> None:
        """Remove the groups (empty once the kernel's last process has been reaped, which
        takes a moment after the kernel itself is gone). In a process that is ending, a group
        still emptying is left to the next lmc (:func:`remove_stale_groups`)."""
        deadline = time.monotonic() + _EMPTY_WAIT
        for group in self.groups:
            pause = 0.0005  # the last processes are reaped within a few ms: look again soon
            while True:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if _ENDING or time.monotonic() > deadline:
                        break
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
        self.groups.clear()


def process_ending() -> None:
    """lmc's command returned and its process ends next: the kernels' groups are not waited
    for to empty (a few ms after their last process is killed), the next lmc removes them."""
    _ENDING.append(True)


def remove_stale_groups(backend: CgroupBackend) -> None:
    """Groups of lmc processes that are gone (killed outright): removed when empty."""
    for hierarchy in (backend.pids, backend.memory):
        parent = None if hierarchy is None else hierarchy / _GROUP_PARENT
        if parent is None or not parent.is_dir():
            continue
        for group in parent.iterdir():
            pid = group.name.split("-")[1] if group.name.count("-") >= 2 else ""
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    group.rmdir()
