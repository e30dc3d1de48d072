"""Limits: a process storm stops at the process limit, a full private /tmp says "no space
left", and a memory hog is killed by the sandbox's memory limit, each with the sandbox's
line in the output; the same attempts succeed with the sandbox off."""

from __future__ import annotations

from collections.abc import Iterator

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
