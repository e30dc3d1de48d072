"""The shell kernel (kernels/lmc_shell) driven through jupyter_client, real bash underneath."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

pytestmark = pytest.mark.timeout(120)

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@dataclass
class Run:
    """Everything one execute request produced, IOPub messages in arrival order."""

    messages: list[tuple[str, dict[str, Any], float]] = field(default_factory=list)
    reply: dict[str, Any] = field(default_factory=dict)

    @property
    def events(self) -> list[tuple[str, Any]]:
        """("line", n) / ("stdout", text) / ("stderr", text) / ("error", ename) in order."""
        events: list[tuple[str, Any]] = []
        for msg_type, content, _ in self.messages:
            if msg_type == "lmc_active_line":
                events.append(("line", content["line"]))
            elif msg_type == "stream":
                if events and events[-1][0] == content["name"]:
                    events[-1] = (content["name"], events[-1][1] + content["text"])
                else:
                    events.append((content["name"], content["text"]))
            elif msg_type == "error":
                events.append(("error", content["ename"]))
        return events

    def text(self, name: str = "stdout") -> str:
        return "".join(
            c["text"] for t, c, _ in self.messages if t == "stream" and c["name"] == name
        )

    @property
    def lines(self) -> list[int | None]:
        return [c["line"] for t, c, _ in self.messages if t == "lmc_active_line"]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c for t, c, _ in self.messages if t == "error"]


class Shell:
    def __init__(self, manager: KernelManager, client: Any) -> None:
        self.manager = manager
        self.client = client

    def run(self, code: str, *, timeout: float = 15, interrupt_after: float | None = None) -> Run:
        """Execute ``code``; optionally interrupt once it has run ``interrupt_after`` seconds."""
        run = Run()
        msg_id = self.client.execute(code)
        start = time.monotonic()
        interrupted = False
        while True:
            now = time.monotonic()
            assert now - start < timeout, f"no idle status within {timeout}s: {run.events}"
            if interrupt_after is not None and not interrupted and now - start >= interrupt_after:
                self.manager.interrupt_kernel()
                interrupted = True
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            msg_type, content = msg["msg_type"], msg["content"]
            if msg_type == "status":
                if content["execution_state"] == "idle":
                    break
                continue
            if msg_type != "execute_input":
                run.messages.append((msg_type, content, time.monotonic() - start))
        reply = self.client.get_shell_msg(timeout=timeout)
        assert reply["parent_header"]["msg_id"] == msg_id
        run.reply = reply["content"]
        return run


@pytest.fixture(scope="module")
def shell() -> Iterator[Shell]:
    specs = KernelSpecManager(kernel_dirs=[str(KERNELS)], ensure_native_kernel=False)
    manager = KernelManager(kernel_name="lmc_shell", kernel_spec_manager=specs)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield Shell(manager, client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_spec_names_bash() -> None:
    spec = KernelSpecManager(kernel_dirs=[str(KERNELS)]).get_kernel_spec("lmc_shell")
    assert spec.language == "bash"
    assert spec.argv[0] == "python3"
    assert spec.interrupt_mode == "signal"


def test_echo_reports_line_then_output(shell: Shell) -> None:
    run = shell.run("echo hello")
    assert run.events == [("line", 1), ("stdout", "hello\n"), ("line", None)]
    assert run.reply["status"] == "ok"


def test_active_lines_interleave_with_output_in_order(shell: Shell) -> None:
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


def test_state_persists_between_runs(shell: Shell) -> None:
    shell.run('export LMC_T=42; cd /tmp; greet() { echo "hi $1"; }; plain=7')
    run = shell.run("echo \"$LMC_T $PWD $plain\"; greet you; bash -c 'echo $LMC_T'")
    assert run.text() == "42 /tmp 7\nhi you\n42\n"


def test_dollar_question_is_not_clobbered(shell: Shell) -> None:
    assert shell.run("false; echo $?").text() == "1\n"
    assert shell.run("false\necho $?").text() == "1\n"
    assert shell.run("f() { return 7; }\nf\necho $?").text() == "7\n"


def test_pipestatus_and_last_argument_survive_the_trap(shell: Shell) -> None:
    run = shell.run("false | true\necho ${PIPESTATUS[@]}\necho one two\necho $_")
    assert run.text() == "1 0\none two\ntwo\n"


def test_heredoc_writes_exactly_its_body(shell: Shell, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    body = "  indented $HOME `x` \\n\n\ttab\n##active_line 3##\n"
    run = shell.run(f"cat > {target} <<'EOF'\n{body}EOF\necho done")
    assert run.reply["status"] == "ok"
    assert target.read_text() == body
    expanded = shell.run("N=5\ncat <<EOF\nn=$N\nEOF")
    assert expanded.text() == "n=5\n"


def test_case_functions_and_pipes(shell: Shell) -> None:
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


def test_non_zero_status_is_an_error_at_the_end(shell: Shell) -> None:
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


def test_command_not_found_and_syntax_error(shell: Shell) -> None:
    missing = shell.run("no-such-command-lmc")
    assert "no-such-command-lmc: command not found" in missing.text("stderr")
    assert missing.errors[0]["evalue"] == "exit status 127"
    syntax = shell.run("if then fi")
    assert "syntax error" in syntax.text("stderr")
    assert syntax.errors[0]["evalue"] == "exit status 2"


def test_interrupt_stops_the_command_and_keeps_the_shell(shell: Shell) -> None:
    shell.run("export KEEP=kept; cd /")
    run = shell.run("sleep 30\necho not reached", interrupt_after=0.5, timeout=10)
    assert run.messages[-1][2] < 2.0, "the interrupt took too long"
    assert "not reached" not in run.text()
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert run.reply["status"] == "error"
    after = shell.run("echo $KEEP $PWD")
    assert after.text() == "kept /\n"


def test_interrupt_stops_a_builtin_loop_inside_a_function(shell: Shell) -> None:
    run = shell.run("spin() { while :; do :; done; }\nspin\necho no", interrupt_after=0.5)
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert "no" not in run.text()
    # back at top level: inside a block the only frame is the `.` that runs it
    assert shell.run('echo "${FUNCNAME[*]}"').text() == "source\n"


def test_background_jobs_survive_an_interrupt(shell: Shell) -> None:
    shell.run("sleep 20 & BG=$!")
    shell.run("sleep 30", interrupt_after=0.3)
    assert shell.run("kill -0 $BG && echo alive; kill $BG").text() == "alive\n"


def test_stdin_is_at_end_of_file(shell: Shell) -> None:
    run = shell.run("read line; echo read=$?\ncat\nhead -c 10\necho done", timeout=5)
    assert run.text() == "read=1\ndone\n"
    assert run.messages[-1][2] < 2.0


def test_undecodable_bytes_are_replaced(shell: Shell) -> None:
    assert shell.run(r"printf 'a\xff\xfeb\n'").text() == "a\ufffd\ufffdb\n"
    assert shell.run("printf 'é'; printf '\\n'").text() == "é\n"


def test_output_streams_while_the_block_runs(shell: Shell) -> None:
    run = shell.run("echo first\nsleep 1\necho second")
    times = {c["text"]: t for msg_type, c, t in run.messages if msg_type == "stream"}
    assert set(times) == {"first\n", "second\n"}
    assert times["second\n"] - times["first\n"] > 0.8


def test_carriage_returns_pass_through(shell: Shell) -> None:
    assert shell.run("printf '10%%\\r50%%\\r100%%\\n'").text() == "10%\r50%\r100%\n"


def test_tight_loop_reports_a_bounded_number_of_lines(shell: Shell) -> None:
    run = shell.run("x=0\nfor i in $(seq 20000); do\n  x=$((x+i))\ndone\necho $x", timeout=60)
    assert run.text() == "200010000\n"
    assert run.lines[:3] == [1, 2, 3]
    assert run.lines[-2:] == [5, None]
    assert len(run.lines) < 1000  # lockstep ended; reports are sampled


def test_set_u_does_not_break_reporting(shell: Shell) -> None:
    run = shell.run("set -u\necho ok\nset +u")
    assert run.text() == "ok\n"
    assert run.lines == [1, 2, 3, None]


def test_exit_ends_the_shell_and_the_next_run_gets_a_new_one(shell: Shell) -> None:
    shell.run("export GONE=1")
    run = shell.run("echo bye\nexit 4")
    assert run.text() == "bye\n"
    assert run.errors[0]["ename"] == "ShellExited"
    assert "status 4" in run.errors[0]["evalue"]
    assert shell.run("echo ${GONE:-fresh}").text() == "fresh\n"


def test_empty_code_is_a_no_op(shell: Shell) -> None:
    run = shell.run("   \n")
    assert run.reply["status"] == "ok"
    assert run.messages == []
