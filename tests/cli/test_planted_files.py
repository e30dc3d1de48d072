"""Files the code planted in the working directory never run in lmc's own process tree.

Each attack plants what a program lmc starts on the host would load from its current
folder, a program that writes a marker outside the working directory (where the sandboxed
code itself cannot write) when it runs. ``lmc doctor`` (R's probe), the ``--python`` check
and an ``npx`` MCP server are run from the planted folder; the marker must stay absent.
The same program started the old way (in the working directory) writes the marker.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.computer.kernelspecs import check_python
from lmc.computer.languages import LANGUAGES
from lmc.mcp.config import parse_server
from lmc.mcp.tools import McpTools


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside / "RAN-ON-THE-HOST"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)  # the person runs lmc in the folder the code wrote to
    return folder


@pytest.mark.skipif(shutil.which("R") is None, reason="R is not installed (CI installs it)")
def test_a_planted_rprofile_is_not_sourced_by_lmc_doctor(
    work: Path, marker: Path, lmc_env: dict[str, str]
) -> None:
    (work / ".Rprofile").write_text(f'writeLines("x", "{marker}")\n')
    result = CliRunner().invoke(app, ["doctor"], env=lmc_env, catch_exceptions=False)
    assert "✓ r " in result.stdout  # R still found working, with its isolation flags
    assert not marker.exists()
    # The probe as lmc ran it before, in the working directory, without R's isolation flags:
    (probe,) = [language.probe for language in LANGUAGES if language.name == "r"]
    assert probe is not None
    old = [probe[0], "--slave", *probe[-2:]]
    subprocess.run(old, cwd=work, capture_output=True, timeout=120, check=False)
    assert marker.exists()


def test_a_planted_ipykernel_is_not_imported_by_the_python_check(
    work: Path, marker: Path, lmc_env: dict[str, str]
) -> None:
    (work / "ipykernel.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    check_python.cache_clear()
    check_python(sys.executable)  # what `lmc run --python PATH` asks first
    check_python.cache_clear()
    result = CliRunner().invoke(
        app, ["doctor", "--python", sys.executable], env=lmc_env, catch_exceptions=False
    )
    assert f"ipykernel on {sys.executable}" in result.stdout
    assert not marker.exists()
    old = [sys.executable, "-c", "import ipykernel"]  # the check as it ran before
    subprocess.run(old, cwd=work, capture_output=True, timeout=120, check=False)
    assert marker.exists()


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed (CI installs it)")
def test_a_planted_node_module_is_not_run_as_an_npx_mcp_server(work: Path, marker: Path) -> None:
    """The README's filesystem server, ``npx -y @modelcontextprotocol/server-filesystem``;
    npm offline, so the real one is not fetched (the start fails: ENOTCACHED)."""
    package = work / "node_modules" / "@modelcontextprotocol" / "server-filesystem"
    package.mkdir(parents=True)
    (package / "package.json").write_text(
        json.dumps(
            {
                "name": "@modelcontextprotocol/server-filesystem",
                "version": "9.9.9",
                "bin": {"mcp-server-filesystem": "index.js"},
            }
        )
    )
    (package / "index.js").write_text(
        f"#!/usr/bin/env node\nrequire('fs').writeFileSync({json.dumps(str(marker))}, 'x')\n"
    )
    (package / "index.js").chmod(0o755)
    (work / "node_modules" / ".bin").mkdir()
    (work / "node_modules" / ".bin" / "mcp-server-filesystem").symlink_to(
        "../@modelcontextprotocol/server-filesystem/index.js"
    )
    table: dict[str, object] = {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", str(work)],
        "env": {"npm_config_offline": "true"},
        "startup_timeout": 120,
    }
    tools = McpTools({"files": parse_server("files", table)}, roots=[work])
    try:
        tools.descriptions()  # starts the server (and waits for its start to end)
    finally:
        tools.close()
    assert not marker.exists()
    old = ["npx", "-y", "@modelcontextprotocol/server-filesystem", str(work)]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work.parent),
           "npm_config_offline": "true"}  # fmt: skip
    subprocess.run(old, cwd=work, env=env, capture_output=True, timeout=120, check=False)
    assert marker.exists()  # the old cwd: npx ran the planted copy
