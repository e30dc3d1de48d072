"""Settings for the terminal: defaults, a TOML file, ``LMC_*`` variables and flags, in that order.

The file lives at ``platformdirs.user_config_dir("lmc")/config.toml`` (``LMC_CONFIG`` points
elsewhere). Top-level keys are the defaults; each table is a named profile that overrides
them; ``profile = "name"`` at the top (or ``LMC_PROFILE``) picks one when ``--profile`` is not
given::

    model = "hf:ggml-org/gpt-oss-20b-GGUF"
    reasoning = "medium"

    [fast]
    reasoning = "low"
    max_tokens = 2048

MCP servers are ``[mcp.servers.NAME]`` tables (in a profile: ``[fast.mcp.servers.NAME]``,
which adds to or replaces the top-level ones); see :mod:`lmc.mcp.config`. ``--mcp NAME``
keeps only the servers named, ``--no-mcp`` none.

The ``[sandbox]`` table is settings, not a profile (profiles may have their own
``[NAME.sandbox]``)::

    [sandbox]
    mode = "workspace"      # or "read-only", "off"; absent: workspace where a sandbox works
    network = false
    hide = ["~/.config/secret-tool"]   # hidden besides ~/.ssh, ~/.aws, ...

Environment variables are the key in capitals after ``LMC_`` (``LMC_CONTEXT_SIZE=16384``;
for the sandbox ``LMC_SANDBOX``, ``LMC_NETWORK``, ``LMC_SANDBOX_HIDE`` (``:``-separated)).
Flags win over everything. Every value is checked here, so a typo is one clear line, not a
traceback deep in the agent.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lmc.errors import ConfigError
from lmc.paths import data_dir

__all__ = [
    "REASONING_LEVELS",
    "Settings",
    "config_path",
    "data_dir",
    "load_settings",
]

REASONING_LEVELS: Final = ("low", "medium", "high")


@dataclass(slots=True)
class Settings:
    """Everything the terminal needs to build an Interpreter and render its stream."""

    model: str | None = None
    api_base: str | None = None
    replay: str | None = None
    auto_run: bool = False
    reasoning: str = "medium"
    show_reasoning: bool = False
    context_size: int | None = None  # None: fitted to the model and the machine
    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    gpu_layers: int | None = None
    max_steps: int = 20
    instructions: str | None = None
    db_path: str | None = None
    verbose: bool = False
    #: MCP servers by name (:class:`lmc.mcp.config.McpServerConfig`), after --mcp/--no-mcp.
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    sandbox: str | None = None  # None: workspace where a sandbox works, else off
    network: bool = False
    sandbox_hide: tuple[str, ...] = ()
    workdir: str | None = None
    #: The faster-whisper model that hears audio messages (None: faster-whisper "base").
    stt_model: str | None = None
    # -- issue 19 (terminal helper): approval rules and the person's python ------------------
    #: Approval rules kept in the config (``[approve] allow = [...]``, lmc.agent.approvals).
    approve_allow: tuple[str, ...] = ()
    #: The interpreter whose environment runs the python kernel (None: lmc's own).
    python: str | None = None
    #: Where the values came from, for ``lmc doctor`` (key -> "default", "file", ...).
    sources: dict[str, str] = field(default_factory=dict, compare=False)


def _as_str(key: str, value: object) -> str:
    if isinstance(value, str) and value:
        return value
    raise ConfigError(f"{key} must be a non-empty string, not {value!r}")


def _as_bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
    raise ConfigError(f"{key} must be true or false, not {value!r}")


def _as_int(key: str, value: object, minimum: int) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ConfigError(f"{key} must be a whole number, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be a whole number, not {value!r}")
    if value < minimum:
        raise ConfigError(f"{key} must be at least {minimum}, not {value}")
    return value


def _as_float(key: str, value: object, low: float, high: float) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ConfigError(f"{key} must be a number, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{key} must be a number, not {value!r}")
    if not low <= float(value) <= high:
        raise ConfigError(f"{key} must be between {low} and {high}, not {value}")
    return float(value)


def _as_reasoning(key: str, value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in REASONING_LEVELS:
        return value.strip().lower()
    raise ConfigError(f"{key} must be one of {', '.join(REASONING_LEVELS)}, not {value!r}")


def _optional(check: Callable[[str, object], Any]) -> Callable[[str, object], Any]:
    """Allow an explicit "none" (env) to reset an optional value to None."""

    def convert(key: str, value: object) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none"):
            return None
        return check(key, value)

    return convert


def _as_sandbox_mode(key: str, value: object) -> str:
    from lmc.computer.sandbox.policy import check_mode

    if not isinstance(value, str):
        raise ConfigError(f"{key} must be off, workspace or read-only, not {value!r}")
    try:
        return check_mode(value)
    except ConfigError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def _as_paths(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part for part in value.split(os.pathsep) if part)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ConfigError(f"{key} must be a list of paths, not {value!r}")


def _as_rules(key: str, value: object) -> tuple[str, ...]:
    """Approval rules (issue 19): each one must parse, so a typo is reported when read."""
    from lmc.agent.approvals import parse_rule

    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{key} must be a list of rules, such as ["git status", "python"]')
    for text in value:
        try:
            parse_rule(text)
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}") from exc
    return tuple(value)


#: Tables that hold settings (``[sandbox]``), not profiles: table key -> setting.
_SECTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    "sandbox": {"mode": "sandbox", "network": "network", "hide": "sandbox_hide"},
    "approve": {"allow": "approve_allow"},  # issue 19 (terminal helper)
}


def _flatten(layer: Mapping[str, object], origin: str) -> dict[str, object]:
    """``[sandbox] mode = ...`` as the flat setting ``sandbox``; a plain string too."""
    flat: dict[str, object] = {}
    for key, value in layer.items():
        names = _SECTIONS.get(key)
        if names is None or not isinstance(value, dict):
            flat[key] = value
            continue
        for inner, raw in value.items():
            if inner not in names:
                known = ", ".join(names)
                raise ConfigError(
                    f"unknown setting '{key}.{inner}' in {origin}", hint=f"known: {known}"
                )
            flat[names[inner]] = raw
    return flat


_CONVERTERS: Final[Mapping[str, Callable[[str, object], Any]]] = {
    "model": _optional(_as_str),
    "api_base": _optional(_as_str),
    "replay": _optional(_as_str),
    "auto_run": _as_bool,
    "reasoning": _as_reasoning,
    "show_reasoning": _as_bool,
    "context_size": _optional(lambda k, v: _as_int(k, v, 256)),
    "max_tokens": _optional(lambda k, v: _as_int(k, v, 1)),
    "temperature": lambda k, v: _as_float(k, v, 0.0, 2.0),
    "top_p": lambda k, v: _as_float(k, v, 0.0, 1.0),
    "seed": _optional(lambda k, v: _as_int(k, v, 0)),
    "gpu_layers": _optional(lambda k, v: _as_int(k, v, -1)),
    "max_steps": lambda k, v: _as_int(k, v, 1),
    "instructions": _optional(_as_str),
    "db_path": _optional(_as_str),
    "verbose": _as_bool,
    "sandbox": _optional(_as_sandbox_mode),
    "network": _as_bool,
    "sandbox_hide": _as_paths,
    "workdir": _optional(_as_str),
    "stt_model": _optional(_as_str),
    # issue 19 (terminal helper)
    "approve_allow": _as_rules,
    "python": _optional(_as_str),
}

KEYS: Final = tuple(_CONVERTERS)


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The config file: ``LMC_CONFIG`` if set, else the platform's user config dir."""
    env = os.environ if env is None else env
    if env.get("LMC_CONFIG"):
        return Path(env["LMC_CONFIG"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("lmc")) / "config.toml"


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"the config file {path} is not valid TOML: {exc}", hint="fix or remove it"
        ) from exc


def _apply(
    values: dict[str, Any],
    sources: dict[str, str],
    layer: Mapping[str, object],
    origin: str,
) -> None:
    for key, raw in _flatten(layer, origin).items():
        if key not in _CONVERTERS:
            known = ", ".join(KEYS)
            raise ConfigError(f"unknown setting {key!r} in {origin}", hint=f"known: {known}")
        values[key] = _CONVERTERS[key](f"{key} ({origin})", raw)
        sources[key] = origin


def _mcp_servers(section: object, origin: str) -> dict[str, Any]:
    if section is None:
        return {}
    from lmc.mcp.config import parse_servers

    return dict(parse_servers(section, origin))


def _choose_mcp(servers: dict[str, Any], names: object, none: object) -> dict[str, Any]:
    """``--no-mcp``: no server; ``--mcp NAME`` (repeatable): only those named."""
    if none:
        return {}
    if not names:
        return servers
    chosen = [names] if isinstance(names, str) else list(names)  # type: ignore[call-overload]
    unknown = [name for name in chosen if name not in servers]
    if unknown:
        known = ", ".join(sorted(servers)) or "none configured"
        raise ConfigError(f"--mcp: no MCP server named {unknown[0]!r}", hint=f"servers: {known}")
    return {name: servers[name] for name in chosen}


def load_settings(
    flags: Mapping[str, object] | None = None,
    *,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """Merge defaults < file < profile < ``LMC_*`` environment < flags (``None`` flags skip)."""
    env = os.environ if env is None else env
    path = config_path(env) if path is None else path
    document = _read_file(path)
    top = {
        k: v
        for k, v in document.items()
        if (not isinstance(v, dict) or k in _SECTIONS) and k != "profile"
    }
    profiles = {
        k: v
        for k, v in document.items()
        if isinstance(v, dict) and k not in _SECTIONS and k != "mcp"
    }

    chosen = profile or env.get("LMC_PROFILE") or document.get("profile")
    if chosen is not None and not isinstance(chosen, str):
        raise ConfigError(f"profile in {path} must be a string, not {chosen!r}")

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    _apply(values, sources, top, f"config file {path}")
    servers = _mcp_servers(document.get("mcp"), f"config file {path}")
    if chosen:
        if chosen not in profiles:
            names = ", ".join(sorted(profiles)) or "none defined"
            raise ConfigError(f"no profile named {chosen!r} in {path}", hint=f"profiles: {names}")
        layer = dict(profiles[chosen])
        servers.update(_mcp_servers(layer.pop("mcp", None), f"profile {chosen!r}"))
        _apply(values, sources, layer, f"profile {chosen!r}")

    from_env = {key: env[f"LMC_{key.upper()}"] for key in KEYS if f"LMC_{key.upper()}" in env}
    for key, raw in from_env.items():
        _apply(values, sources, {key: raw}, f"LMC_{key.upper()}")

    given = {k: v for k, v in (flags or {}).items() if v is not None}
    values["mcp_servers"] = _choose_mcp(servers, given.pop("mcp", None), given.pop("no_mcp", None))
    _apply(values, sources, given, "flags")
    for key, origin in sources.items():
        if origin == "flags":
            sources[key] = "flag"

    settings = Settings(**values)
    settings.sources = {
        f.name: sources.get(f.name, "default") for f in dataclasses.fields(Settings)
    }
    settings.sources.pop("sources", None)
    return settings
