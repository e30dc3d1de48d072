"""``Computer.run_relaxed``: one block again with what the sandbox denied it, in a throwaway
kernel that is gone right after, while the computer's own kernels stay strict. Attempts are
real (a loopback server, a write outside the workdir) and checked from outside."""

from __future__ import annotations

import os

import pytest
from support.processes import descendants, wait_gone
from support.sandbox_testing import Place, connect_code, loopback_server, output_of, write_code

from lmc.computer import Computer
from lmc.computer.sandbox import PREFIX
from lmc.errors import ComputerError
from lmc.messages import text_of


def test_a_blocked_connection_runs_again_with_the_network_and_the_kernel_is_strict_after(
    contained: Computer,
) -> None:
    with loopback_server() as port:
        code = connect_code("python", port)
        assert PREFIX in output_of(contained, "python", code)
        assert contained.last_run_lacked == "network"
        before = descendants(os.getpid())
        again = "".join(
            text_of(c)
            for c in contained.run_relaxed("python", code, "network")
            if c.get("format") == "output"
        )
        assert "hello" in again and PREFIX not in again, again
        assert contained.last_run_lacked is None
        # The throwaway kernel is gone; the computer's own kernel still has no network.
        assert wait_gone(descendants(os.getpid()) - before, timeout=30) == set()
        out = output_of(contained, "python", code)
        assert "hello" not in out and contained.last_run_lacked == "network"


def test_a_refused_write_runs_again_without_the_sandbox(place: Place, contained: Computer) -> None:
    target = place.outside / f"relaxed-{os.getpid()}.txt"
    code = write_code("python", target)
    assert PREFIX in output_of(contained, "python", code) and not target.exists()
    assert contained.last_run_lacked == "unsandboxed"
    list(contained.run_relaxed("python", code, "unsandboxed"))
    assert target.read_text() == "x"
    target.unlink()
    output_of(contained, "python", code)
    assert not target.exists()


def test_only_what_a_block_can_lack_is_given(contained: Computer) -> None:
    with pytest.raises(ComputerError, match="cannot run a block again"):
        list(contained.run_relaxed("python", "print(1)", "root"))
