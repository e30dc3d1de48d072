"""The sandbox settings: the ``[sandbox]`` table (not a profile), profiles, environment,
flags, and the options ``lmc`` passes on to ``lmc run``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli_replays import code, final
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.cli.options import SharedOptions
from lmc.config import load_settings
from lmc.errors import ConfigError

CONFIG = """
workdir = "~/scratch"

[sandbox]
mode = "read-only"
network = true
hide = ["~/.config/tool/token", "/srv/secret"]

[open]
sandbox = "off"

[loose.sandbox]
network = false
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return path


def test_the_sandbox_table_is_settings_not_a_profile(config: Path) -> None:
    settings = load_settings(env={}, path=config)
    assert (settings.sandbox, settings.network, settings.workdir) == (
        "read-only",
        True,
        "~/scratch",
    )
    assert settings.sandbox_hide == ("~/.config/tool/token", "/srv/secret")
    with pytest.raises(ConfigError, match="no profile named 'sandbox'"):
        load_settings(env={}, path=config, profile="sandbox")


def test_profiles_environment_and_flags_override_it(config: Path) -> None:
    assert load_settings(env={}, path=config, profile="open").sandbox == "off"
    assert not load_settings(env={}, path=config, profile="loose").network
    env = {"LMC_SANDBOX": "workspace", "LMC_NETWORK": "0", "LMC_SANDBOX_HIDE": "/a:/b"}
    settings = load_settings(env=env, path=config)
    assert (settings.sandbox, settings.network, settings.sandbox_hide) == (
        "workspace",
        False,
        ("/a", "/b"),
    )
    flags = SharedOptions(sandbox="off", network=True, workdir="/w").flags()
    settings = load_settings(flags, env=env, path=config)
    assert (settings.sandbox, settings.network, settings.workdir) == ("off", True, "/w")
    assert settings.sources["sandbox"] == "flag"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sandbox]\nmode = "container"\n', "off, workspace, read-only"),
        ("[sandbox]\nnetwrok = true\n", "unknown setting 'sandbox.netwrok'"),
        ('[sandbox]\nhide = "~/.x"\n', "hide"),
        ("[sandbox]\nhide = [1]\n", "list of paths"),
    ],
)
def test_bad_sandbox_settings_are_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    if message == "hide":  # a single string is one path
        assert load_settings(env={}, path=path).sandbox_hide == ("~/.x",)
        return
    with pytest.raises(ConfigError, match=message):
        load_settings(env={}, path=path)


def test_flags_before_the_subcommand_reach_lmc_run(
    lmc_env: dict[str, str], tiny_model: Path, replay: Callable[..., Path], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = replay(code("open('here.txt', 'w').write('x')"), final("Done."))
    args = ["--sandbox", "read-only", "--no-network", "run", "--workdir", str(work), "-y"]
    result = CliRunner().invoke(
        app,
        [*args, "-m", str(tiny_model), "--replay", str(path), "write"],
        env=lmc_env,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert "[blocked by the sandbox] it may write only in /tmp (read-only mode)" in result.stdout
    assert not (work / "here.txt").exists()
