"""``lmc harmony render``: the real command, in-process and as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lmc.cli.app import app

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harmony"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
RENDER_CASES = [case for case in CASES if case["kind"] == "render"]
REPO = Path(__file__).resolve().parent.parent.parent

runner = CliRunner()

CONVERSATION = {
    "messages": [
        {"role": "user", "name": None, "content": [{"type": "text", "text": "2 + 2?"}]},
        {
            "role": "assistant",
            "name": None,
            "content": [{"type": "text", "text": "Simple."}],
            "channel": "analysis",
        },
        {
            "role": "assistant",
            "name": None,
            "content": [{"type": "text", "text": "4"}],
            "channel": "final",
        },
    ]
}


def _flags(case: dict[str, Any]) -> list[str]:
    flags = []
    if not case["auto_drop_analysis"]:
        flags.append("--no-drop-analysis")
    if case["next_role"] is None:
        flags.append("--no-next-role")
    return flags


@pytest.mark.parametrize("case", RENDER_CASES, ids=[c["name"] for c in RENDER_CASES])
def test_render_command_reproduces_every_case(case: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "conversation.json"
    source.write_text(json.dumps(case["conversation"]), encoding="utf-8")
    result = runner.invoke(app, ["harmony", "render", str(source), *_flags(case)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == case["expected"]
    assert result.stderr == ""


def test_render_reads_standard_input_by_default() -> None:
    result = runner.invoke(app, ["harmony", "render"], input=json.dumps(CONVERSATION))
    assert result.exit_code == 0
    assert result.stdout == (
        "<|start|>user<|message|>2 + 2?<|end|>"
        "<|start|>assistant<|channel|>final<|message|>4<|end|><|start|>assistant"
    )


def test_no_drop_analysis_and_no_next_role() -> None:
    result = runner.invoke(
        app,
        ["harmony", "render", "-", "--no-drop-analysis", "--no-next-role"],
        input=json.dumps(CONVERSATION),
    )
    assert result.exit_code == 0
    assert result.stdout == (
        "<|start|>user<|message|>2 + 2?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Simple.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>4<|end|>"
    )


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"messages": [{"role": "wizard", "content": []}]}', "unknown role 'wizard'"),
        ('{"messages": [{"role": "user"}]}', "messages[0]: missing 'content'"),
        (
            '{"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]}',
            "messages[0].content[0].text: expected a string, got a number",
        ),
        ("[1, 2]", "a conversation must be a JSON object"),
        ('{"messages": [{"role": "tool", "content": []}]}', "a tool message needs"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_status_2(stdin: str, message: str) -> None:
    result = runner.invoke(app, ["harmony", "render"], input=stdin)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n")
    assert "Traceback" not in result.stderr


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["harmony", "render", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def _lmc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from lmc.cli.app import main; main()", *args],
        input=None if stdin is None else stdin.encode(),
        capture_output=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        timeout=60,
        check=False,
    )


def test_real_process_prints_exactly_the_rendered_text() -> None:
    # The browser case holds non-ASCII text (【】†); stdout must be UTF-8 and end without newline.
    case = next(c for c in RENDER_CASES if c["name"] == "test_browser_and_function_tool")
    done = _lmc("harmony", "render", "-", stdin=json.dumps(case["conversation"]))
    assert done.returncode == 0, done.stderr
    assert done.stdout == case["expected"].encode("utf-8")
    assert done.stderr == b""


def test_real_process_error_exits_2_with_one_line() -> None:
    done = _lmc("harmony", "render", "-", stdin='{"messages": [{"role": "robot", "content": []}]}')
    assert done.returncode == 2
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "unknown role 'robot'" in lines[0]
