"""lmc's wrapper kernels (bash, node) run in the connect guard's own process: the step puts
the filter on, then runs the kernel's script where a second Python would have started (see
lmc.computer.sandbox.guard_step). Looked at from inside the sandbox (the wrapper is the
code's parent), and shown to behave as a fresh interpreter would: the filter on, SIGINT
reaching the code, the python kernel (ipykernel) still started as its own program."""

from __future__ import annotations

import sys
import threading

import pytest
from support.computer_testing import collect
from support.computer_testing import output_of as text_out
from support.processes import unique_seconds, wait_until_gone, wait_until_running
from support.sandbox_testing import Place, output_of

from lmc.computer import Computer
from lmc.computer.sandbox import find_tool
from lmc.computer.sandbox.connect_guard import guard_problem
from lmc.computer.sandbox.guard_step import _python_script

pytestmark = pytest.mark.skipif(
    not find_tool().usable or guard_problem() is not None, reason="no sandbox or no guard"
)

PARENT = {
    "shell": "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; grep Seccomp_filters /proc/$PPID/status",
    "javascript": (
        "const fs = require('fs');\n"
        "const p = process.ppid;\n"
        "console.log(fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\\0').join(' '));\n"
        "console.log(fs.readFileSync(`/proc/${p}/status`, 'utf8').split('\\n')"
        ".filter(l => l.startsWith('Seccomp_filters')).join(''));"
    ),
}


@pytest.mark.parametrize(("language", "script"), [
    ("shell", "lmc_shell_kernel.py"),
    ("javascript", "lmc_javascript_kernel.py"),
])  # fmt: skip
def test_a_wrapper_kernel_runs_in_the_steps_process(
    language: str, script: str, place: Place
) -> None:
    with Computer(sandbox="workspace", workdir=place.work) as computer:
        said = output_of(computer, language, PARENT[language])
    line, filters = said.splitlines()[:2]
    assert "guard_step.py --in-place" in line and line.rstrip().endswith(".json"), said
    assert script in line
    assert filters.split() == ["Seccomp_filters:", "2"], said  # the sandbox's and the guard's


def test_the_python_kernel_starts_as_its_own_program(place: Place) -> None:
    code = "print(open('/proc/self/cmdline').read().replace('\\0', ' '))"
    with Computer(sandbox="workspace", workdir=place.work) as computer:
        said = output_of(computer, "python", code)
    assert "guard_step" not in said, said


def test_an_interrupt_reaches_code_run_in_place(place: Place) -> None:
    """SIGINT is back at its default for the in-place kernel, as ``env`` would set it: an
    interrupt ends the running block and the shell's state stays."""
    sleep = ("sleep", unique_seconds(900))
    with Computer(sandbox="workspace", workdir=place.work, block_timeout=0) as computer:
        collect(computer, "shell", "KEPT=yes")

        def interrupt_once_running() -> None:
            assert wait_until_running(*sleep)
            computer.interrupt()

        helper = threading.Thread(target=interrupt_once_running)
        helper.start()
        out = text_out(collect(computer, "shell", f"{' '.join(sleep)}\necho after"))
        helper.join()
        assert wait_until_gone(*sleep)
        assert "after" not in out and "interrupted" in out, out
        assert text_out(collect(computer, "shell", "echo $KEPT")) == "yes\n"


def test_only_this_interpreters_scripts_run_in_place() -> None:
    python = sys.executable
    assert _python_script(["env", "--default-signal=INT", python, "/k/a.py", "-f", "c"]) == [
        "/k/a.py", "-f", "c",
    ]  # fmt: skip
    assert _python_script(["env", "--default-signal=INT", "/usr/bin/python3", "/k/a.py"]) is None
    assert _python_script(["env", "--default-signal=INT", python, "-m", "ipykernel"]) is None
    assert _python_script([python, "/k/a.py", "-f", "c"]) is None
    assert _python_script(["env", "--default-signal=INT", "Rscript", "x"]) is None
