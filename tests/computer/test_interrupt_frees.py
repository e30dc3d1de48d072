"""One interrupt frees the shell kernel even from a program that ignores SIGINT.

The program (a bash that traps INT and TERM away, running a ``sleep``) is found from outside
by its command line; after the interrupt the block ends, nothing of it is left, and the next
block runs. The wrapper kernel escalates SIGINT to SIGTERM and SIGKILL of the code's
processes (keeping the shell and its state); should that come too late on a loaded machine,
lmc restarts the kernel and says so: either way the kernel is free.
"""

from __future__ import annotations

import threading
from pathlib import Path

from support.computer_testing import collect, output_of
from support.processes import pids_of, unique_seconds, wait_until_gone, wait_until_running

from lmc.computer import Computer


def test_one_interrupt_frees_the_shell_from_a_program_ignoring_it(tmp_path: Path) -> None:
    sleep = ("sleep", unique_seconds(1000))
    background = ("sleep", unique_seconds(999))  # left running by an earlier block
    program = " ".join(sleep)
    code = f"bash -c 'trap \"\" INT TERM; {program}'\necho after"
    with Computer(workdir=tmp_path, block_timeout=0) as computer:
        collect(computer, "shell", f"KEPT=yes; {' '.join(background)} &")
        assert wait_until_running(*background)

        def interrupt_once_running() -> None:
            assert wait_until_running(*sleep)
            computer.interrupt()

        helper = threading.Thread(target=interrupt_once_running)
        helper.start()
        out = output_of(collect(computer, "shell", code))
        helper.join()
        assert wait_until_gone(*sleep)
        after = output_of(collect(computer, "shell", "echo next=$KEPT"))
        if "kernel was restarted" in out:
            assert after == "next=\n"
        else:
            assert after == "next=yes\n"
            assert "after" not in out  # the rest of the interrupted block did not run
            assert "interrupted" in out
            # What an earlier block left in the background is not this block's to kill.
            assert pids_of(*background)
    assert wait_until_gone(*background)
