"""The README's Zed settings start an lmc that answers ``initialize``: the command and
arguments an editor is told to use are the ones that work."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.acp_client import ROOT


def _zed_settings() -> dict[str, Any]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### lmc acp:", 1)[1].split("\n### ", 1)[0]
    block = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no Zed settings in the README's lmc acp section"
    settings: dict[str, Any] = json.loads(block.group(1))
    return settings


def test_the_zed_settings_of_the_readme_start_a_working_agent(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    agent = _zed_settings()["agent_servers"]["lmc"]
    assert agent["type"] == "custom" and agent["command"] == "lmc"
    lmc = shutil.which("lmc", path=str(Path(sys.executable).parent)) or "lmc"
    done = subprocess.run(
        [lmc, *agent["args"]],
        input='{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
        '"params": {"protocolVersion": 1}}\n',
        capture_output=True,
        text=True,
        env={**os.environ, **lmc_env, **agent["env"], "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["result"]["agentInfo"]["name"] == "lmc"
