"""The shell kernel (kernels/lmc_shell) driven through jupyter_client, real bash underneath."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from support.kernel_testing import KERNELS, KernelDriver, kernel_pid, running_kernel

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def shell() -> Iterator[KernelDriver]:
    with running_kernel("lmc_shell") as driver:
        yield driver


def test_spec_names_bash() -> None:
    spec = KernelSpecManager(kernel_dirs=[str(KERNELS)]).get_kernel_spec("lmc_shell")
    assert spec.language == "bash"
    assert spec.argv[0] == "python3"
    assert spec.interrupt_mode == "signal"


def test_shared_wrapper_code_is_not_a_kernel() -> None:
    names = KernelSpecManager(kernel_dirs=[str(KERNELS)]).find_kernel_specs()
    assert "lmc_shell" in names
    assert "lmc_wrapper" not in names


def test_echo_reports_line_then_output(shell: KernelDriver) -> None:
    run = shell.run("echo hello")
    assert run.events == [("line", 1), ("stdout", "hello\n"), ("line", None)]
    assert run.reply["status"] == "ok"


def test_active_lines_interleave_with_output_in_order(shell: KernelDriver) -> None:
    run = shell.run("echo 1\n\n# a comment\necho 2 >&2\necho 3")
    assert run.events == [
        ("line", 1),
        ("stdout", "1\n"),
        ("line", 4),
        ("stderr", "2\n"),
        ("line", 5),
        ("stdout", "3\n"),
        ("line", None),
    ]


def test_state_persists_between_runs(shell: KernelDriver) -> None:
    shell.run('export LMC_T=42; cd /tmp; greet() { echo "hi $1"; }; plain=7')
    run = shell.run("echo \"$LMC_T $PWD $plain\"; greet you; bash -c 'echo $LMC_T'")
    assert run.text() == "42 /tmp 7\nhi you\n42\n"


def test_dollar_question_is_not_clobbered(shell: KernelDriver) -> None:
    assert shell.run("false; echo $?").text() == "1\n"
    assert shell.run("false\necho $?").text() == "1\n"
    assert shell.run("f() { return 7; }\nf\necho $?").text() == "7\n"


def test_pipestatus_and_last_argument_survive_the_trap(shell: KernelDriver) -> None:
    run = shell.run("false | true\necho ${PIPESTATUS[@]}\necho one two\necho $_")
    assert run.text() == "1 0\none two\ntwo\n"


def test_heredoc_writes_exactly_its_body(shell: KernelDriver, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    body = "  indented $HOME `x` \\n\n\ttab\n##active_line 3##\n"
    run = shell.run(f"cat > {target} <<'EOF'\n{body}EOF\necho done")
    assert run.reply["status"] == "ok"
    assert target.read_text() == body
    expanded = shell.run("N=5\ncat <<EOF\nn=$N\nEOF")
    assert expanded.text() == "n=5\n"


def test_case_functions_and_pipes(shell: KernelDriver) -> None:
    code = (
        "classify() {\n"
        "  case $1 in\n"
        "    [0-9]*) echo number;;\n"
        "    *) echo word;;\n"
        "  esac\n"
        "}\n"
        "classify 12; classify abc\n"
        "printf 'b\\na\\nc\\n' | sort | head -2 | tr a-z A-Z\n"
    )
    run = shell.run(code)
    assert run.text() == "number\nword\nA\nB\n"
    assert run.lines[0] == 7  # a function definition is not a command; the call is
    assert run.lines[-1] is None


def test_non_zero_status_is_an_error_at_the_end(shell: KernelDriver) -> None:
    run = shell.run("echo before\nfalse")
    assert run.events == [
        ("line", 1),
        ("stdout", "before\n"),
        ("line", 2),
        ("line", None),
        ("error", "ExitStatus"),
    ]
    assert run.errors == [
        {"ename": "ExitStatus", "evalue": "exit status 1", "traceback": ["exit status 1"]}
    ]
    assert run.reply["status"] == "error"
    assert run.reply["ename"] == "ExitStatus"
    assert shell.run("(exit 3)").errors[0]["evalue"] == "exit status 3"


def test_command_not_found_and_syntax_error(shell: KernelDriver) -> None:
    missing = shell.run("no-such-command-lmc")
    assert "no-such-command-lmc: command not found" in missing.text("stderr")
    assert missing.errors[0]["evalue"] == "exit status 127"
    syntax = shell.run("if then fi")
    assert "syntax error" in syntax.text("stderr")
    assert syntax.errors[0]["evalue"] == "exit status 2"


def test_interrupt_stops_the_command_and_keeps_the_shell(shell: KernelDriver) -> None:
    shell.run("export KEEP=kept; cd /")
    run = shell.run("sleep 30\necho not reached", interrupt_after=0.5, timeout=10)
    assert "not reached" not in run.text()
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert run.reply["status"] == "error"
    after = shell.run("echo $KEEP $PWD")
    assert after.text() == "kept /\n"


def test_interrupt_stops_a_builtin_loop_inside_a_function(shell: KernelDriver) -> None:
    frames = shell.run('echo "${FUNCNAME[*]}|${BASH_SOURCE[*]##*/}"').text()
    run = shell.run("spin() { while :; do :; done; }\nspin\necho no", interrupt_after=0.5)
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert "no" not in run.text()
    # back at top level: the next block's call stack is a fresh block's, nothing left of spin
    after = shell.run('echo "${FUNCNAME[*]}|${BASH_SOURCE[*]##*/}"').text()
    assert after.split("|")[0] == frames.split("|")[0] == ""


def test_busy_loops_of_every_kind_are_interrupted(shell: KernelDriver) -> None:
    shell.run("kept=yes")
    loops = [
        "while :; do :; done",
        "f() { g; echo after; }; g() { while :; do :; done; }; f; echo after",
        "eval 'while :; do :; done'; echo after",
        "while :; do ((i++)); done",
        "while :; do :; done | cat",
        "( while :; do :; done ); echo after",
        "sleep 30 & wait; echo after",
    ]
    for code in loops:
        run = shell.run(code, interrupt_after=0.3, timeout=10)
        assert run.errors[0]["ename"] == "KeyboardInterrupt", code
        assert "after" not in run.text(), code
    assert shell.run("echo $kept").text() == "yes\n"


def test_background_jobs_survive_an_interrupt(shell: KernelDriver) -> None:
    shell.run("sleep 20 & BG=$!")
    shell.run("sleep 30", interrupt_after=0.3)
    assert shell.run("kill -0 $BG && echo alive; kill $BG").text() == "alive\n"


def test_stdin_is_at_end_of_file(shell: KernelDriver) -> None:
    run = shell.run("read line; echo read=$?\ncat\nhead -c 10\necho done", timeout=5)
    assert run.text() == "read=1\ndone\n"
    # `read` says why it got nothing (on stderr), as lmc says for Python's input().
    assert "asked for keyboard input (read)" in run.text("stderr")
    piped = shell.run("echo y | { read a; echo got=$a; }; read -u 0 b < /dev/null; echo $?")
    assert piped.text() == "got=y\n1\n"
    assert piped.text("stderr") == ""


def test_undecodable_bytes_are_replaced(shell: KernelDriver) -> None:
    assert shell.run(r"printf 'a\xff\xfeb\n'").text() == "a\ufffd\ufffdb\n"
    assert shell.run("printf 'é'; printf '\\n'").text() == "é\n"


def test_output_streams_while_the_block_runs(shell: KernelDriver, tmp_path: Path) -> None:
    """The block waits (up to 30 s) for a file the test writes only once ``first`` has
    arrived: output held back to the end would make it say ``late``."""
    seen = tmp_path / "seen"
    code = (
        f"echo first\nfor i in $(seq 300); do [ -e {seen} ] && break; sleep 0.1; done\n"
        f"[ -e {seen} ] && echo second || echo late"
    )

    def on_stream(text: str) -> None:
        if text == "first\n":
            seen.touch()

    run = shell.run(code, timeout=60, on_stream=on_stream)
    assert run.text() == "first\nsecond\n"


def test_carriage_returns_pass_through(shell: KernelDriver) -> None:
    assert shell.run("printf '10%%\\r50%%\\r100%%\\n'").text() == "10%\r50%\r100%\n"


def test_tight_loop_reports_a_bounded_number_of_lines(shell: KernelDriver) -> None:
    run = shell.run("x=0\nfor i in $(seq 20000); do\n  x=$((x+i))\ndone\necho $x", timeout=60)
    assert run.text() == "200010000\n"
    assert run.lines[:3] == [1, 2, 3]
    assert run.lines[-2:] == [5, None]
    assert len(run.lines) < 1000  # lockstep ended; reports are sampled


def test_set_u_does_not_break_reporting(shell: KernelDriver) -> None:
    run = shell.run("set -u\necho ok\nset +u")
    assert run.text() == "ok\n"
    assert run.lines == [1, 2, 3, None]


def test_exit_ends_the_shell_and_the_next_run_gets_a_new_one(shell: KernelDriver) -> None:
    shell.run("export GONE=1")
    run = shell.run("echo bye\nexit 4")
    assert run.text() == "bye\n"
    assert run.errors[0]["ename"] == "ShellExited"
    assert "status 4" in run.errors[0]["evalue"]
    assert shell.run("echo ${GONE:-fresh}").text() == "fresh\n"


def test_empty_code_is_a_no_op(shell: KernelDriver) -> None:
    run = shell.run("   \n")
    assert run.reply["status"] == "ok"
    assert run.messages == []


def test_bash_dies_with_a_kernel_killed_outright() -> None:
    """Killed with SIGKILL, the kernel cannot close bash; bash must not spin on orphaned."""
    import os
    import signal
    import sys

    from support.processes import wait_gone

    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    with running_kernel("lmc_shell") as shell:
        bash = int(shell.run("echo $$").text())
        msg_id = shell.client.execute("while :; do :; done")  # busy when the kernel dies
        while True:
            msg = shell.client.get_iopub_msg(timeout=30)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == (
                "lmc_active_line"
            ):
                break
        os.kill(kernel_pid(shell.manager), signal.SIGKILL)
        assert wait_gone({bash}, timeout=10) == set(), "bash outlived its kernel"


def test_the_block_files_live_in_the_kernels_folder_and_go_with_the_session(
    tmp_path: Path,
) -> None:
    """lmc kills its kernels at exit without a grace period, so the shell kernel's own
    clean-up never runs: its block folder (scripts, input FIFOs) was made in /tmp and left
    there, one per kernel (over a thousand after a day of tests). It is now made in the
    kernel's own folder, which goes with lmc's session."""
    from lmc.computer import Computer

    with Computer(sandbox="off", workdir=tmp_path) as computer:
        said = "".join(
            str(chunk.get("content"))
            for chunk in computer.run("shell", 'echo "dir=${__lmc_file%/*}"')
            if chunk.get("format") == "output"
        )
        folder = Path(said.split("dir=", 1)[1].strip())
        assert folder.is_dir() and folder.name.startswith("lmc-shell-")
        assert folder.parent.name.startswith("k-")  # the kernel's own folder
    assert not folder.exists()
