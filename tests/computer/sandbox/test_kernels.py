"""The sandboxed kernel itself: it outlives the thread that started it, and its exit status
and cwd are what they would be outside."""

from __future__ import annotations

from support.sandbox_testing import Place, output_of

from lmc.computer import Computer
from lmc.computer.kernel import KernelSession


def test_the_kernel_survives_the_thread_that_started_it(contained: Computer) -> None:
    contained.start("python")
    session = contained._sessions["python"]
    assert isinstance(session, KernelSession)
    session.wait_ready()
    assert session._thread is not None
    session._thread.join()  # die-with-parent would fire here if bwrap had started from it
    assert output_of(contained, "python", "print(40 + 2)") == "42\n"
    assert session.alive


def test_the_kernel_starts_in_the_workdir(place: Place, contained: Computer) -> None:
    assert output_of(contained, "python", "import os; print(os.getcwd())") == f"{place.work}\n"


def test_a_kernel_killed_by_a_signal_is_described_as_outside(contained: Computer) -> None:
    out = output_of(contained, "python", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert "killed by SIGKILL" in out, out
    assert output_of(contained, "python", "print('back')").endswith("back\n")
