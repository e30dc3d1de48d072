"""Limits: a process storm stops at the process limit, a full private /tmp says "no space
left", and a memory hog is killed by the sandbox's memory limit, each with the sandbox's
line in the output; the same attempts succeed with the sandbox off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sandbox_testing import Place, output_of

from lmc.computer import Computer
from lmc.computer.sandbox import PREFIX, Limits
from lmc.computer.sandbox.limits import GIB, MIB, default_memory, find_backend

SPAWN = """
import subprocess
started = []
try:
    for _ in range({count}):
        started.append(subprocess.Popen(['sleep', '60']))
    print('started all')
except OSError as exc:
    print('stopped at', len(started), exc)
finally:
    for p in started:
        p.kill()
        p.wait()
"""
SMALL = Limits(processes=64, memory=512 * MIB, tmp_size=32 * MIB, shm_size=32 * MIB)


@pytest.fixture(scope="module")
def limited(place: Place) -> Iterator[Computer]:
    assert find_backend().kind == "cgroup-v1", find_backend()  # what these machines offer
    computer = Computer(sandbox="workspace", workdir=place.work, sandbox_limits=SMALL)
    yield computer
    computer.close()


def test_a_process_storm_stops_at_the_limit(limited: Computer, uncontained: Computer) -> None:
    code = SPAWN.format(count=100)
    out = output_of(limited, "python", code)
    assert "stopped at" in out and PREFIX in out and "64 processes" in out, out
    assert "started all" in output_of(uncontained, "python", code)


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm"])
def test_filling_the_private_tmp_says_no_space(
    folder: str, limited: Computer, uncontained: Computer
) -> None:
    code = (
        f"dd if=/dev/zero of={folder}/lmc-fill-test bs=1M count=48 2>&1 | grep -v records; "
        f"rm -f {folder}/lmc-fill-test"
    )
    out = output_of(limited, "shell", code)
    assert "No space left" in out and PREFIX in out, out
    assert "No space left" not in output_of(uncontained, "shell", code)
    assert output_of(limited, "shell", "echo alive") == "alive\n"


def test_a_memory_hog_is_stopped_by_the_memory_limit(
    limited: Computer, uncontained: Computer
) -> None:
    code = "blocks = [bytearray(64 * 1024 * 1024) for _ in range(12)]\nprint('allocated')"
    out = output_of(limited, "python", code)
    assert "allocated" not in out and "memory limit" in out, out
    assert "allocated" in output_of(uncontained, "python", code)
    assert output_of(limited, "python", "print('back')").endswith("back\n")


def test_the_default_memory_leaves_room_for_a_full_tmp_and_shm() -> None:
    limits = Limits()
    assert limits.processes == 256 and limits.tmp_size == limits.shm_size == GIB
    assert limits.memory == default_memory() >= 4 * GIB
    assert limits.memory >= 2 * (limits.tmp_size + limits.shm_size)


GROUPS_OF_A_RUN = """
import os, sys
from pathlib import Path
from lmc.computer import Computer
from lmc.computer.sandbox.limits import find_backend, process_ending
backend = find_backend()
computer = Computer(sandbox="workspace", workdir=sys.argv[1])
said = [c.get("content") for c in computer.run("shell", "echo hi") if c.get("format") == "output"]
assert said == ["hi\\n"], said
mine = lambda: sorted(str(p) for h in (backend.pids, backend.memory)
                      for p in (h / "lmc").glob(f"k-{os.getpid()}-*"))
made = mine()
if sys.argv[2] == "ending":
    process_ending()
computer.close()
print(len(made), len(mine()))
"""


@pytest.mark.parametrize("ending", [False, True], ids=["close", "process-ending"])
def test_a_kernels_groups_go_at_close_or_with_the_next_lmc(place: Place, ending: bool) -> None:
    """A closed computer removes its kernel's control groups itself; in a process that is
    ending (``lmc run`` once the command returned) it may leave them, and the next lmc's
    start removes them (the pid in their name is gone)."""
    import subprocess
    import sys

    backend = find_backend()
    assert backend.pids is not None and backend.memory is not None
    child = subprocess.run(
        [sys.executable, "-c", GROUPS_OF_A_RUN, str(place.work), "ending" if ending else "-"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    made, left = map(int, child.stdout.split())
    assert made == 2  # a pids group and a memory group
    if not ending:
        assert left == 0
    # Whatever was left, the next lmc's start removes it.
    starting = "from lmc.computer.sandbox.limits import find_backend; find_backend()"
    subprocess.run([sys.executable, "-c", starting], check=True, timeout=60)
    groups = [p for h in (backend.pids, backend.memory) for p in (h / "lmc").glob("k-*-*")]
    stale = [g for g in groups if not Path(f"/proc/{g.name.split('-')[1]}").exists()]
    assert stale == []  # no group of a process that is gone (the child's among them) stays
