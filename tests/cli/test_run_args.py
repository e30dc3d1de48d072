"""``lmc run``'s arguments read without typer (lmc.cli.run_args) are read as typer reads them.

Each plain command line goes through both: typer's app (with ``run_once`` recording what it
was given instead of running) and :func:`read_run_args`; the prompt, ``--audio`` and every
option's value must be the same. Command lines that are not plain must come back None, so
typer answers them (its help, its errors) as before; and ``lmc run`` started as the console
script does start without typer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lmc.cli import commands, oneshot
from lmc.cli.app import app
from lmc.cli.options import SharedOptions
from lmc.cli.run_args import read_run_args

ROOT = Path(__file__).resolve().parents[2]

PLAIN = [
    ["run", "hello"],
    ["run", "-"],
    ["run"],
    ["run", "-y", "--json", "--api-base", "http://127.0.0.1:8080/v1", "hi there"],
    ["run", "hi", "--api-style", "completions", "--sandbox", "off", "--workdir", "/tmp/w"],
    ["run", "--api-style=CHAT", "--reasoning", "High", "say it"],
    ["run", "--temperature", "0.5", "--top-p=1", "--seed", "0", "--max-tokens", "12", "x"],
    ["run", "--context", "4096", "--gpu-layers", "-1", "x"],
    ["run", "--block-timeout", "2.5e1", "--max-steps", "+3", "x"],
    ["run", "--no-network", "--checkpoints", "--no-apply-patch", "--kernel-state", "x"],
    ["run", "--network", "--no-checkpoints", "--apply-patch", "--no-kernel-state", "x"],
    ["run", "--mcp", "a", "--mcp=b c", "--no-mcp", "x"],
    ["run", "-m", "gpt-oss-20b", "-p", "work", "--verbose", "--show-reasoning", "x"],
    ["run", "--model", "", "--replay", "r.txt", "x"],
    ["run", "--audio", "q.wav"],
    ["run", "--audio=-", "--json"],
    ["run", "--browser", "local", "--browser-url", "http://x", "--python", "/usr/bin/python3"],
    ["run", "--kernel-gateway", "http://gw", "--kernel-gateway-token", "t", "x"],
    ["run", "--stt-model", "tiny", "x"],
]

NOT_PLAIN = [
    [],
    ["--help"],
    ["-y", "run", "x"],
    ["history"],
    ["run", "--help"],
    ["run", "-h"],
    ["run", "--nope", "x"],
    ["run", "-yv", "x"],
    ["run", "-mgpt", "x"],
    ["run", "--yes=1", "x"],
    ["run", "--temperature", "5", "x"],  # out of range: typer says so
    ["run", "--temperature", "nan", "x"],
    ["run", "--max-tokens", "0", "x"],
    ["run", "--max-tokens", "1_000", "x"],
    ["run", "--sandbox", "sometimes", "x"],
    ["run", "--model"],
    ["run", "--model", "-y", "x"],
    ["run", "a", "b"],
    ["run", "--", "-x"],
    ["run", "--resume", "x"],
    ["run", "--seed", "1", "--seed", "2", "x"],
    ["run", "--audio", "a.wav", "--audio", "b.wav"],
]


def _typer_reads(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    seen: list[tuple[Any, ...]] = []

    def record(prompt: str | None, options: SharedOptions, audio: str | None = None) -> int:
        seen.append((prompt, audio, options))
        return 0

    monkeypatch.setattr(oneshot, "run_once", record)
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_a_plain_run_is_read_as_typer_reads_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "probe_sandbox_early", lambda _mode: None)
    prompt, audio, options = _typer_reads(argv, monkeypatch)
    plain = read_run_args(argv)
    assert plain is not None
    assert (plain.prompt, plain.audio) == (prompt, audio)
    assert SharedOptions(**plain.given) == options


@pytest.mark.parametrize("argv", NOT_PLAIN, ids=" ".join)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert read_run_args(argv) is None


def test_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_LMC_COMPLETE", "bash_complete")
    assert read_run_args(["run", "x"]) is None


def test_the_console_script_runs_a_plain_run_without_typer(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    """The entry point itself: a plain ``lmc run`` (here one with no prompt: exit 2 and its
    one line) never imports typer; ``lmc run --nope`` gets typer's own error."""
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print('typer' in sys.modules, file=sys.stderr))\n"
        "sys.argv[0] = 'lmc'\n"
        "from lmc.cli.app import main\n"
        "main()\n"
    )
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)}

    def lmc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    plain = lmc("run", "--json", "-")
    assert plain.returncode == 2, plain.stderr
    assert plain.stderr.splitlines() == ["lmc: error: the prompt is empty", "False"]
    typo = lmc("run", "--nope", "x")
    assert typo.returncode == 2
    assert "No such option: --nope" in typo.stderr
    assert typo.stderr.splitlines()[-1] == "True"
