"""The option table (lmc.settings) drives every interface: each option is walked through its
flags (on every command that takes it, before and after the subcommand), its ``LMC_*``
variable, the config file (top level, profile, ``[section]`` table) and the Interpreter's
keywords; zero and false must arrive as given, never replaced by a default or a lower layer."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import lmc.cli.acp
import lmc.cli.chat
import lmc.cli.doctor
import lmc.cli.mcp_commands
import lmc.cli.oneshot
import lmc.cli.serve
import lmc.cli.session
from lmc.agent import Interpreter
from lmc.cli.app import app
from lmc.cli.options import SharedOptions
from lmc.config import load_settings
from lmc.errors import ConfigError
from lmc.settings import COMMAND_OPTIONS, OPTIONS, SETTINGS, Option, Settings

COMMANDS = ("chat", "run", "serve", "acp", "doctor", "mcp list", "mcp serve")


def sample(spec: Option) -> Any:
    """A value unlike the default: zero or false wherever the option allows one."""
    kind = spec.kind
    if kind == "bool":
        return not spec.default
    if kind in ("int", "float"):
        low = spec.minimum if spec.minimum is not None else 0
        value = max(low, 0) if low <= 0 else low
        return int(value) if kind == "int" else float(value)
    if kind == "choice":
        return next(choice for choice in spec.choices if choice != spec.default)
    if kind == "path":
        return f"/tmp/lmc-{spec.key}"
    if kind == "paths":
        return ("/srv/a", "/srv/b")
    if kind == "names":
        return ("NAME_A", "NAME_B")
    if kind == "size":
        return 2 * 1024**2
    if kind == "table":
        return {"python": f"value-{spec.key}", "r": "ir"}
    return f"value-{spec.key}"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def env_value(value: Any) -> str:
    if isinstance(value, tuple):
        return ":".join(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value).lower() if isinstance(value, bool) else str(value)


def flag_args(spec: Option, value: Any) -> list[str]:
    if spec.kind == "bool":
        if value:
            return [spec.flags[0]]
        assert spec.off_flag is not None
        return [spec.off_flag]
    if spec.kind == "names":
        return [word for name in value for word in (spec.flags[0], name)]
    return [spec.flags[0], str(value)]


def test_every_sample_differs_from_the_default() -> None:
    for spec in SETTINGS:
        assert sample(spec) != spec.default, spec.key
    assert {spec.key for spec in SETTINGS} == {
        f.name for f in dataclasses.fields(Settings) if f.name not in ("mcp_servers", "sources")
    }


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("LMC_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("spec", SETTINGS, ids=lambda s: s.key)
def test_every_setting_from_the_file_top_level_and_a_profile(tmp_path: Path, spec: Option) -> None:
    value = sample(spec)
    path = tmp_path / "config.toml"
    path.write_text(f"{spec.key} = {toml_value(value)}\n")
    settings = load_settings(env={}, path=path)
    assert getattr(settings, spec.key) == value
    assert settings.sources[spec.key] == f"config file {path}"
    path.write_text(f"[p]\n{spec.key} = {toml_value(value)}\n")
    assert getattr(load_settings(env={}, path=path, profile="p"), spec.key) == value
    if spec.section is not None:
        table, name = spec.section
        path.write_text(f"[{table}]\n{name} = {toml_value(value)}\n")
        assert getattr(load_settings(env={}, path=path), spec.key) == value


@pytest.mark.parametrize("spec", SETTINGS, ids=lambda s: s.key)
def test_every_setting_from_its_variable_over_the_file(tmp_path: Path, spec: Option) -> None:
    value = sample(spec)
    assert spec.variable == f"LMC_{spec.key.upper()}"
    path = tmp_path / "config.toml"
    path.write_text(f"{spec.key} = {toml_value(value)}\n")  # the variable must win over it
    back = spec.default if spec.default is not None else value
    settings = load_settings(env={spec.variable: env_value(value)}, path=tmp_path / "none.toml")
    assert getattr(settings, spec.key) == value
    assert settings.sources[spec.key] == spec.variable
    if back != value:  # the default (say false or 1.0) set by the variable beats the file's value
        again = load_settings(env={spec.variable: env_value(back)}, path=path)
        assert getattr(again, spec.key) == back


@pytest.mark.parametrize("spec", SETTINGS, ids=lambda s: s.key)
def test_every_setting_as_an_interpreter_keyword_and_in_settings(spec: Option) -> None:
    value = sample(spec)
    with Interpreter(**{spec.key: value}) as interpreter:
        assert getattr(interpreter.settings, spec.key) == value
    with Interpreter(Settings(**{spec.key: value})) as interpreter:
        assert getattr(interpreter.settings, spec.key) == value


def test_the_interpreter_checks_values_and_names() -> None:
    with pytest.raises(ConfigError, match=r"temperature must be between 0\.0 and 2\.0, not 3"):
        Interpreter(temperature=3)
    with pytest.raises(ConfigError, match="top_p must be between"):
        Interpreter(Settings(top_p=7.0))
    with pytest.raises(TypeError, match="'temprature'"):
        Interpreter(temprature=0.5)


Captured = list[tuple[str, SharedOptions]]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> Iterator[Captured]:
    """Each command records the options it got instead of doing its work."""
    seen: Captured = []

    def record(name: str) -> Callable[..., int]:
        def fake(*args: Any, **_: Any) -> int:
            options = next(a for a in args if isinstance(a, SharedOptions))
            seen.append((name, options))
            return 0

        return fake

    monkeypatch.setattr(lmc.cli.oneshot, "run_once", record("run"))
    monkeypatch.setattr(lmc.cli.chat, "chat", record("chat"))
    monkeypatch.setattr(lmc.cli.serve, "serve", record("serve"))
    monkeypatch.setattr(lmc.cli.acp, "run_acp", record("acp"))
    monkeypatch.setattr(lmc.cli.doctor, "doctor", record("doctor"))
    monkeypatch.setattr(lmc.cli.mcp_commands, "list_servers", record("mcp list"))

    def settings_for(options: SharedOptions) -> Settings:
        seen.append(("mcp serve", options))
        import typer

        raise typer.Exit(0)

    monkeypatch.setattr(lmc.cli.session, "settings_for", settings_for)
    yield seen


def invoke(command: str, args: list[str], env: dict[str, str], outer: Sequence[str] = ()) -> None:
    words = [] if command == "chat" else command.split()
    result = CliRunner().invoke(app, [*outer, *words, *args], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("spec", "command"),
    [(spec, command) for spec in OPTIONS for command in COMMANDS if command in spec.commands],
    ids=lambda v: v.key if isinstance(v, Option) else v,
)
def test_every_flag_on_every_command_beats_the_file_and_the_variable(
    captured: Captured, tmp_path: Path, spec: Option, command: str
) -> None:
    value = sample(spec) if spec.setting else {"bool": True, "names": ("x",)}.get(spec.kind, "n")
    env = {}
    if spec.setting:
        # Lower layers hold another value (for a switch: the opposite one).
        other = spec.default if spec.default is not None else value
        other = (not value) if spec.kind == "bool" else other
        path = tmp_path / "config.toml"
        if other is not None and other != value:
            path.write_text(f"{spec.key} = {toml_value(other)}\n")
            env[spec.variable or ""] = env_value(other)
        else:
            path.touch()
        env["LMC_CONFIG"] = str(path)
    invoke(command, flag_args(spec, value), env)
    name, options = captured[-1]
    assert name == command
    assert options.get(spec.key) == value
    if spec.setting:
        flags = options.flags()
        settings = load_settings(flags, env=env)
        assert getattr(settings, spec.key) == value
        assert settings.sources[spec.key] == "flag"
    if spec.off_flag is not None:  # false given as a flag beats true in the file and variable
        path = tmp_path / "on.toml"
        path.write_text(f"{spec.key} = true\n")
        env = {"LMC_CONFIG": str(path), spec.variable or "": "1"}
        invoke(command, [spec.off_flag], env)
        settings = load_settings(captured[-1][1].flags(), env=env)
        assert getattr(settings, spec.key) is False


@pytest.mark.parametrize("spec", [s for s in OPTIONS if "run" in s.commands], ids=lambda s: s.key)
def test_a_flag_before_run_fills_in_and_one_after_it_wins(captured: Captured, spec: Option) -> None:
    value = sample(spec) if spec.setting else {"bool": True, "names": ("x",)}.get(spec.kind, "n")
    invoke("run", [], {}, outer=flag_args(spec, value))
    assert captured[-1][1].get(spec.key) == value  # given before `run`: kept
    if spec.kind in ("int", "float") and spec.maximum is not None:
        outer = flag_args(spec, spec.maximum)
        invoke("run", flag_args(spec, value), {}, outer=outer)
        assert captured[-1][1].get(spec.key) == value  # zero after `run` beats the outer value


def test_the_zero_values_of_the_review_reach_the_settings(
    captured: Captured, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("temperature = 0.5\ntop_p = 0.9\nseed = 7\ngpu_layers = 12\n")
    args = ["--temperature", "0", "--top-p", "0", "--seed", "0", "--gpu-layers", "0"]
    invoke("run", args, {}, outer=["--temperature", "1.5", "--seed", "3"])
    settings = load_settings(captured[-1][1].flags(), env={}, path=path)
    assert (settings.temperature, settings.top_p, settings.seed, settings.gpu_layers) == (
        0.0,
        0.0,
        0,
        0,
    )


def test_the_profile_option_by_flag_variable_and_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('profile = "a"\n[a]\nseed = 1\n[b]\nseed = 0\n')
    assert load_settings(env={}, path=path).seed == 1
    assert load_settings(env={"LMC_PROFILE": "b"}, path=path).seed == 0
    assert load_settings(profile="b", env={"LMC_PROFILE": "a"}, path=path).seed == 0
    assert [o.key for o in COMMAND_OPTIONS] == ["json", "resume", "profile", "mcp", "no_mcp"]


def test_every_profile_is_checked_when_the_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('model = "m"\n[unused]\ntemprature = 0.5\n')
    with pytest.raises(ConfigError, match="unknown setting 'temprature' in profile 'unused'"):
        load_settings(env={}, path=path)
    path.write_text("[unused]\ntemperature = 5\n")
    with pytest.raises(ConfigError, match=r"temperature \(profile 'unused'\) must be between"):
        load_settings(env={}, path=path)
    path.write_text("[unused.sandbox]\nnetwrok = true\n")
    with pytest.raises(ConfigError, match=r"unknown setting 'sandbox\.netwrok'"):
        load_settings(env={}, path=path)
    path.write_text('[unused.mcp.servers.x]\ncommand = "c"\ncomand = "c"\n')
    with pytest.raises(ConfigError, match="unknown key 'comand'"):
        load_settings(env={}, path=path)


def test_a_missing_lmc_config_is_one_line_and_a_failure(tmp_path: Path, clean_env: None) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope.toml \(LMC_CONFIG\) does not exist"):
        load_settings(env={"LMC_CONFIG": str(missing)})
    result = CliRunner().invoke(
        app, ["run", "hi"], env={"LMC_CONFIG": str(missing), "NO_COLOR": "1"}
    )
    assert result.exit_code != 0
    assert result.stderr.strip().splitlines()[0] == (
        f"lmc: error: the config file {missing} (LMC_CONFIG) does not exist"
    )
    assert "Traceback" not in result.output


def test_the_samples_are_valid_toml() -> None:
    text = "\n".join(f"{spec.key} = {toml_value(sample(spec))}" for spec in SETTINGS)
    assert set(tomllib.loads(text)) == {spec.key for spec in SETTINGS}
