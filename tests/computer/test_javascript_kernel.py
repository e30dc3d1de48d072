"""The JavaScript kernel (kernels/lmc_javascript) driven through jupyter_client, real node."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from support.kernel_testing import KERNELS, KernelDriver, running_kernel

from lmc.computer import Computer

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]


@pytest.fixture(scope="module")
def node() -> Iterator[KernelDriver]:
    with running_kernel("lmc_javascript") as driver:
        yield driver


def test_spec_names_javascript() -> None:
    spec = KernelSpecManager(kernel_dirs=[str(KERNELS)]).get_kernel_spec("lmc_javascript")
    assert spec.language == "javascript"
    assert spec.argv[0] == "python3"
    assert spec.interrupt_mode == "signal"


def test_console_log_reports_line_then_output(node: KernelDriver) -> None:
    run = node.run("console.log('hello')")
    assert run.events == [("line", 1), ("stdout", "hello\n"), ("line", None)]
    assert run.reply["status"] == "ok"


def test_lines_output_and_result_in_order(node: KernelDriver) -> None:
    run = node.run("console.log(1)\n\n// note\nconsole.error(2)\n2 + 3")
    assert run.events == [
        ("line", 1),
        ("stdout", "1\n"),
        ("line", 4),
        ("stderr", "2\n"),
        ("line", 5),
        ("result", "5"),
        ("line", None),
    ]


def test_statements_on_one_line_report_it_once(node: KernelDriver) -> None:
    assert node.run("let one = 1; let two = 2; one + two").lines == [1, None]


def test_let_const_class_and_functions_persist(node: KernelDriver) -> None:
    node.run(
        "let counter = 1\n"
        "const box = {items: [1, 2]}\n"
        "class Point { constructor(x) { this.x = x } }\n"
        "function twice(n) { return 2 * n }"
    )
    run = node.run("counter += 1;\n[counter, box.items.length, new Point(3).x, twice(4)]")
    assert run.results == ["[ 2, 2, 3, 8 ]"]
    redeclared = node.run("let counter = 5")
    assert redeclared.errors[0]["ename"] == "SyntaxError"


def test_top_level_await_keeps_declarations(node: KernelDriver) -> None:
    run = node.run("const late = await new Promise(r => setTimeout(() => r(42), 50))\nlate")
    assert run.results == ["42"]
    assert node.run("late + 1").results == ["43"]
    assert node.run("await Promise.resolve('x')").results == ["'x'"]


def test_a_promise_value_is_shown_not_awaited(node: KernelDriver) -> None:
    assert node.run("Promise.resolve(3)").results == ["Promise { 3 }"]


def test_hoisting_works_across_statements(node: KernelDriver) -> None:
    run = node.run(
        "console.log(hoisted(), typeof later)\nfunction hoisted() { return 'h' }\nvar later = 1"
    )
    assert run.text() == "h undefined\n"


def test_error_has_name_message_and_stack_with_cell_lines(node: KernelDriver) -> None:
    run = node.run("function fail() {\n  throw new TypeError('bad thing')\n}\n\nfail()")
    assert run.events[-2:] == [("line", None), ("error", "TypeError")]
    error = run.errors[0]
    assert error["evalue"] == "bad thing"
    assert error["traceback"] == [
        "TypeError: bad thing",
        "    at fail (cell:2:9)",
        "    at cell:5:1",
    ]
    assert run.reply["status"] == "error"
    assert run.reply["ename"] == "TypeError"


def test_syntax_error_points_at_the_line(node: KernelDriver) -> None:
    run = node.run("let fine = 1;\nlet = ;")
    error = run.errors[0]
    assert error["ename"] == "SyntaxError"
    assert error["traceback"][0] == "cell:2"
    assert "let = ;" in error["traceback"]


def test_thrown_non_error_and_async_error(node: KernelDriver) -> None:
    assert node.run("throw 5").errors[0]["evalue"] == "5"
    run = node.run(
        "async function later() { await 0; throw new Error('async boom') }\nawait later()"
    )
    assert run.errors[0]["traceback"][:2] == ["Error: async boom", "    at later (cell:1:41)"]


def test_unhandled_rejection_is_reported_and_node_survives(node: KernelDriver) -> None:
    run = node.run("Promise.reject(new Error('nobody waits')); 5")
    assert run.results == ["5"]
    assert "Uncaught (in promise) Error: nobody waits" in run.text("stderr")
    assert node.run("6").results == ["6"]


def test_interrupt_stops_a_busy_loop_and_keeps_state(node: KernelDriver) -> None:
    node.run("let kept = 'still here'")
    run = node.run("while (true) {}", interrupt_after=0.5, timeout=10)
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert node.run("kept").results == ["'still here'"]


def test_interrupt_abandons_a_pending_await(node: KernelDriver) -> None:
    run = node.run(
        "await new Promise(r => setTimeout(r, 30000))\nconsole.log('no')", interrupt_after=0.5
    )
    assert run.errors[0]["ename"] == "KeyboardInterrupt"
    assert "no" not in run.text()
    assert node.run("kept.length").results == ["10"]


def test_an_interrupt_right_after_the_first_output_is_not_lost(computer: Computer) -> None:
    # The SIGINT lands as `console.log` ends its statement, where node's breakOnSigint
    # watchdog drops it; lost, the run waited out the grace time and the kernel was restarted.
    # Landing just after the statement, it met node's own exit-on-SIGINT handler, which the
    # watchdog puts back when it stops: node died (1 run in 30 before the driver held the
    # watchdog), so the test interrupts 200 runs; each must stop, and node stay.
    list(computer.run("javascript", "var survivor = 'still here'"))
    for _ in range(200):
        text = _interrupted_at_first_output(computer)
        assert "KeyboardInterrupt" in text or "interrupted" in text, text
        assert "restarted" not in text and "new node" not in text, text
    assert [
        c["content"] for c in computer.run("javascript", "survivor") if c.get("format") == "output"
    ] == ["'still here'\n"]


def test_the_codes_own_sigint_listener_neither_kills_node_nor_loses_the_interrupt(
    node: KernelDriver,
) -> None:
    # Such a listener makes node give SIGINT to libuv, whose handler vm takes off around a
    # busy script: an interrupt then met the default handler and ended node with its state.
    node.run("let kept2 = 'kept'; process.on('SIGINT', () => console.log('listener ran'))")
    busy = node.run("while (true) {}", interrupt_after=0.5, timeout=10)
    assert busy.errors[0]["ename"] == "KeyboardInterrupt"
    waiting = node.run("await new Promise(r => setTimeout(r, 30000))", interrupt_after=0.5)
    assert waiting.errors[0]["ename"] == "KeyboardInterrupt"
    assert "listener ran" in waiting.text()
    assert node.run("process.removeAllListeners('SIGINT'); kept2").results == ["'kept'"]


def _interrupted_at_first_output(computer: Computer) -> str:
    chunks = []
    for chunk in computer.run(
        "javascript", "console.log('first'); await new Promise(r => setTimeout(r, 30000))"
    ):
        chunks.append(chunk)
        if chunk.get("format") == "output" and "first" in str(chunk.get("content")):
            computer.interrupt()
    return "".join(str(c["content"]) for c in chunks if c.get("format") == "output")


def test_builtin_modules_require_and_import(node: KernelDriver) -> None:
    assert node.run("path.join('a', 'b')").results == ["'a/b'"]
    assert node.run("require('node:os').EOL").results == ["'\\n'"]
    run = node.run("const { sep } = await import('node:path'); sep")
    assert run.results == ["'/'"]
    assert run.text("stderr") == ""


def test_stdin_is_at_end_of_file(node: KernelDriver) -> None:
    code = "let got = ''\nfor await (const chunk of process.stdin) got += chunk\ngot.length"
    run = node.run(code, timeout=5)
    assert run.results == ["0"]


def test_undecodable_bytes_are_replaced(node: KernelDriver) -> None:
    run = node.run("process.stdout.write(Buffer.from([0x61, 0xff, 0x62, 0x0a])); undefined")
    assert run.text() == "a\ufffdb\n"


def test_output_streams_while_the_code_runs(node: KernelDriver, tmp_path: Path) -> None:
    """The code waits (up to 30 s) for a file the test writes only once ``first`` has
    arrived: output held back to the end would make it say ``late``."""
    seen = json.dumps(str(tmp_path / "seen"))
    code = (
        "console.log('first')\n"
        f"for (let i = 0; i < 300 && !require('fs').existsSync({seen}); i++)\n"
        "  await new Promise(r => setTimeout(r, 100))\n"
        f"console.log(require('fs').existsSync({seen}) ? 'second' : 'late')"
    )

    def on_stream(text: str) -> None:
        if text == "first\n":
            (tmp_path / "seen").touch()

    run = node.run(code, timeout=60, on_stream=on_stream)
    assert run.text() == "first\nsecond\n"


def test_process_exit_is_reported_and_a_new_node_starts(node: KernelDriver) -> None:
    node.run("globalThis.gone = 1")
    run = node.run("console.log('bye')\nprocess.exit(3)")
    assert run.text() == "bye\n"
    assert run.errors[0]["ename"] == "NodeExited"
    assert "status 3" in run.errors[0]["evalue"]
    assert node.run("typeof gone").results == ["'undefined'"]


def test_empty_code_is_a_no_op(node: KernelDriver) -> None:
    run = node.run("  \n")
    assert run.reply["status"] == "ok"
    assert run.messages == []


def test_output_of_later_runs_arrives_after_an_interrupt_inside_console_log(
    node: KernelDriver,
) -> None:
    # An interrupt landing inside console.log left node's stdout stream marked as writing:
    # the later runs' output queued behind a callback that never came (and megabytes the loop
    # had queued leaked into them instead).
    loop = "for (let i = 0; ; i++) console.log('x'.repeat(100) + i)"
    for _ in range(2):
        run = node.run(loop, interrupt_after=0.5, timeout=15)
        assert run.errors[0]["ename"] == "KeyboardInterrupt"
        assert run.text().startswith("x" * 100 + "0\n")
        later = node.run("console.log('after'); process.stderr.write('err\\n'); 7")
        assert later.events == [
            ("line", 1),
            ("stdout", "after\n"),
            ("stderr", "err\n"),
            ("result", "7"),
            ("line", None),
        ]
