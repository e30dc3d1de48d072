"""Settings precedence: defaults < config file < profile < LMC_* environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc.config import Settings, load_settings
from lmc.errors import ConfigError

CONFIG = """
model = "from-file.gguf"
reasoning = "low"
temperature = 0.5
profile = "fast"

[fast]
reasoning = "high"
max_tokens = 100

[slow]
context_size = 32768
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    settings = load_settings(env={}, path=tmp_path / "missing.toml")
    assert settings == Settings()
    assert settings.sources["model"] == "default"


def test_file_then_default_profile(config: Path) -> None:
    settings = load_settings(env={}, path=config)
    assert settings.model == "from-file.gguf"
    assert settings.reasoning == "high"  # profile "fast" (picked in the file) wins over top level
    assert settings.max_tokens == 100
    assert settings.temperature == 0.5
    assert settings.sources["reasoning"] == "profile 'fast'"


def test_env_beats_file_and_flags_beat_env(config: Path) -> None:
    env = {"LMC_REASONING": "medium", "LMC_AUTO_RUN": "yes", "LMC_CONTEXT_SIZE": "4096"}
    settings = load_settings(env=env, path=config)
    assert (settings.reasoning, settings.auto_run, settings.context_size) == ("medium", True, 4096)
    flagged = load_settings({"reasoning": "low", "context_size": None}, env=env, path=config)
    assert flagged.reasoning == "low" and flagged.sources["reasoning"] == "flag"
    assert flagged.context_size == 4096  # a flag left out (None) does not override


def test_profile_choice_by_argument_and_env(config: Path) -> None:
    assert load_settings(profile="slow", env={}, path=config).context_size == 32768
    by_env = load_settings(env={"LMC_PROFILE": "slow"}, path=config)
    assert by_env.context_size == 32768 and by_env.reasoning == "low"


def test_unknown_profile_names_the_known_ones(config: Path) -> None:
    with pytest.raises(ConfigError, match="no profile named 'nope'") as info:
        load_settings(profile="nope", env={}, path=config)
    assert info.value.hint == "profiles: fast, slow"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("modle = 'x'", "unknown setting 'modle'"),
        ("reasoning = 'max'", "reasoning .* must be one of low, medium, high"),
        ("context_size = 'big'", "context_size .* must be a whole number"),
        ("temperature = 9", "temperature .* must be between 0.0 and 2.0"),
        ("auto_run = 'perhaps'", "auto_run .* must be true or false"),
        ("model = ", "not valid TOML"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_settings(env={}, path=path)
    assert "\n" not in str(info.value)


def test_bad_env_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="LMC_SEED"):
        load_settings(env={"LMC_SEED": "abc"}, path=tmp_path / "none.toml")


def test_env_none_resets_an_optional_value(config: Path) -> None:
    assert load_settings(env={"LMC_MODEL": "none"}, path=config).model is None


def test_lmc_config_points_at_the_file(config: Path) -> None:
    assert load_settings(env={"LMC_CONFIG": str(config)}).model == "from-file.gguf"
