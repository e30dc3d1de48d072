"""``lmc harmony parse``: the real command, in-process and as a real process."""

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
PARSE_CASES = [case for case in CASES if case["kind"] == "parse"]
REPO = Path(__file__).resolve().parent.parent.parent

runner = CliRunner()


def role_flag(case: dict[str, Any]) -> str:
    return "none" if case["role"] is None else case["role"]


@pytest.mark.parametrize("case", PARSE_CASES, ids=[c["name"] for c in PARSE_CASES])
def test_parse_messages_from_stdin(case: dict[str, Any]) -> None:
    result = runner.invoke(
        app,
        ["harmony", "parse", "--messages", "--role", role_flag(case)],
        input=case["completion"],
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == case["expected"]
    assert result.stdout.endswith("]\n")
    assert result.stderr == ""


def test_parse_messages_from_a_file(tmp_path: Path) -> None:
    case = PARSE_CASES[0]
    source = tmp_path / "completion.txt"
    source.write_text(case["completion"], encoding="utf-8")
    result = runner.invoke(app, ["harmony", "parse", str(source), "--messages"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == case["expected"]


def test_parse_prints_lmc_chunks_as_json_lines() -> None:
    completion = (
        "<|channel|>analysis<|message|>Think.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done \u2713<|return|>"
    )
    result = runner.invoke(app, ["harmony", "parse", "-"], input=completion)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [json.loads(line) for line in lines] == [
        {"role": "assistant", "type": "reasoning", "start": True},
        {"role": "assistant", "type": "reasoning", "content": "Think."},
        {"role": "assistant", "type": "reasoning", "end": True},
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": "Done \u2713"},
        {"role": "assistant", "type": "message", "end": True},
    ]
    assert "\u2713" in result.stdout  # UTF-8 kept readable


def test_unknown_role_is_one_line_on_stderr_and_exit_2() -> None:
    result = runner.invoke(app, ["harmony", "parse", "--role", "robot"], input="x")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "unknown role 'robot'" in result.stderr


def test_unreadable_file_is_one_line_on_stderr_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["harmony", "parse", str(tmp_path / "missing.txt")])
    assert result.exit_code == 2
    assert result.stderr.startswith("lmc harmony: cannot read")
    assert result.stderr.count("\n") == 1


def test_garbage_input_still_parses() -> None:
    result = runner.invoke(
        app, ["harmony", "parse", "--messages", "--role", "none"], input="<|end|><|message|>x"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"role": "assistant", "name": None, "content": [{"type": "text", "text": "x"}]}
    ]


def test_real_process_parses_a_case_and_fails_cleanly() -> None:
    case = PARSE_CASES[0]
    command = [sys.executable, "-c", "from lmc.cli.app import main; main()", "harmony", "parse"]
    done = subprocess.run(
        [*command, "--messages", "--role", "assistant"],
        input=case["completion"].encode(),
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == case["expected"]
    bad = subprocess.run(
        [*command, "--role", "system"],
        input=b"",
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout == b""
    assert bad.stderr.decode().strip() == (
        "lmc harmony: unknown role 'system' (expected assistant or none)"
    )
