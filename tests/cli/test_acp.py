"""``lmc acp`` as a command: the options of ``lmc run``, and a mistake in them told in one
line on stderr before any protocol, with nothing on stdout (the editor reads JSON there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_acp_takes_every_option_of_run_except_those_about_one_prompt() -> None:
    import typer.main

    from lmc.cli.app import app
    from lmc.settings import BY_KEY

    group: Any = typer.main.get_command(app)
    run, acp = group.commands["run"], group.commands["acp"]

    def names(command: Any) -> set[str]:
        return {param.name for param in command.params}

    assert names(run) - names(acp) == {"prompt", "audio", "json", "resume", "show_reasoning"}
    assert names(acp) <= set(BY_KEY)


def test_a_bad_setting_is_one_line_on_stderr_and_nothing_on_stdout(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lmc", "acp"],
        input='{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}\n',
        capture_output=True,
        text=True,
        env={**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "LMC_MAX_STEPS": "many"},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines and lines[0].startswith("lmc: error:") and "max_steps" in done.stderr


def test_log_lines_are_sanitized() -> None:
    """A log line quoting a server or the model cannot drive the terminal showing stderr."""
    import logging

    from lmc.cli.acp import SanitizedFormatter

    record = logging.LogRecord(
        "lmc", logging.WARNING, __file__, 1, "%s", ("\x1b]2;pwn\x07\x9b",), None
    )
    line = SanitizedFormatter("%(message)s").format(record)
    assert line == "^[]2;pwn^G<U+009B>"
