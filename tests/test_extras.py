"""Optional parts: a plain install runs without them, and using one that is missing is one
line with the pip command (the ``mcp`` extra is the example: hidden from a real process)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lmc.errors import MissingExtraError
from lmc.extras import DISTRIBUTION, EXTRAS, install_hint, require, source_of

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_MCP = "import sys; sys.modules['mcp'] = None; "


def _python(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=False,
    )


def test_every_extra_is_declared_and_in_dev() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    assert project["name"] == DISTRIBUTION == "lmc-agent"  # "lmc" on PyPI is another project
    assert project["scripts"] == {"lmc": "lmc.cli.app:main"}  # the command is still lmc
    (everything,) = [r for r in extras["dev"] if r.startswith(f"{DISTRIBUTION}[")]
    assert set(everything[len(DISTRIBUTION) + 1 : -1].split(",")) == set(extras) - {"dev"}
    assert not any(r.startswith("mcp") for r in project["dependencies"])


def test_installed_extras_pass() -> None:
    for extra in EXTRAS:
        require(extra)


def test_a_missing_extra_is_one_line_with_the_pip_command() -> None:
    code = WITHOUT_MCP + "from lmc.extras import require; require('mcp')"
    result = _python(code)
    assert result.returncode != 0
    assert "MissingExtraError: MCP servers need the mcp extra" in result.stderr


def test_the_interpreter_without_mcp(tmp_path: Path) -> None:
    code = WITHOUT_MCP + (
        "from lmc import Interpreter\n"
        "from lmc.errors import MissingExtraError\n"
        "Interpreter().close()\n"  # no MCP server: no mcp needed, none imported
        "assert 'mcp' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "try:\n"
        "    Interpreter(mcp_servers={'x': {'command': 'true'}})\n"
        "except MissingExtraError as exc:\n"
        "    print(exc.hint)\n"
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == install_hint("mcp")


@pytest.mark.parametrize("command", ["list", "serve"])
def test_lmc_mcp_without_the_extra(tmp_path: Path, command: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    env = {"LMC_CONFIG": str(config), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    code = WITHOUT_MCP + "sys.argv[0] = 'lmc'; from lmc.cli.app import main; main()"
    result = _python(code, "mcp", command, env=env)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "lmc: error: MCP servers need the mcp extra, which is not installed (mcp is missing)",
        f"lmc: hint: {install_hint('mcp')}",
    ]


def test_missing_extra_error_is_an_lmc_error() -> None:
    with pytest.raises(KeyError):
        require("nope")
    assert issubclass(MissingExtraError, Exception)


def test_the_hint_names_this_python_and_where_lmc_came_from() -> None:
    """Run from this checkout: the checkout, with the pip of the Python that runs lmc."""
    assert install_hint("server") == f'{sys.executable} -m pip install "{ROOT}[server]"'


def test_every_install_hint_in_the_code_names_the_distribution_or_comes_from_install_hint() -> None:
    """No hint says ``pip install "lmc[...]"``: that installs PyPI's unrelated "lmc"."""
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted([*(ROOT / "lmc").rglob("*.py"), ROOT / "README.md"])
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if 'install "lmc[' in line and "would put in" not in line and "never" not in line
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("direct_url", "source"),
    [
        ('{"url": "file:///home/me/lmc", "dir_info": {}}', "/home/me/lmc"),  # pip install .
        ('{"url": "file:///home/me/my%20lmc", "dir_info": {"editable": true}}', "/home/me/my lmc"),
        ('{"url": "file:///tmp/lmc_agent-0.1.0-py3-none-any.whl", "archive_info": {}}', None),
        (None, None),  # from PyPI: no direct_url.json
        ("not json", None),
    ],
)
def test_where_lmc_was_installed_from(direct_url: str | None, source: str | None) -> None:
    assert source_of(direct_url) == source
