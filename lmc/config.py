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
Flags win over everything. The keys, variables and checks come from the option table
(:mod:`lmc.settings`). The whole file is checked when it is read, every profile included, so
a typo is one clear line, not a traceback deep in the agent; ``LMC_CONFIG`` naming a file
that does not exist is an error too.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from lmc.errors import ConfigError
from lmc.paths import data_dir
from lmc.settings import BY_KEY, REASONING_LEVELS, SETTINGS, Settings, convert

__all__ = [
    "REASONING_LEVELS",
    "Settings",
    "config_path",
    "data_dir",
    "load_settings",
]

KEYS: Final = tuple(o.key for o in SETTINGS)

#: Tables that hold settings (``[sandbox]``), not profiles: table -> key in it -> setting.
_SECTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    table: {o.section[1]: o.key for o in SETTINGS if o.section and o.section[0] == table}
    for table in {o.section[0] for o in SETTINGS if o.section}
}
#: Settings whose value is itself a table (``kernel_gateway_kernels = {python = "python3"}``):
#: a table under that name is the value, not a profile.
_TABLE_VALUED: Final = frozenset(o.key for o in SETTINGS if o.kind == "table")
#: Top-level keys that are neither settings nor profiles.
_SPECIAL: Final = ("profile", "mcp", "mcp_servers")
_PROFILE: Final = BY_KEY["profile"]


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The config file: ``LMC_CONFIG`` if set, else the platform's user config dir."""
    env = os.environ if env is None else env
    if env.get("LMC_CONFIG"):
        return Path(env["LMC_CONFIG"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("lmc")) / "config.toml"


def _read_file(path: Path, required: bool) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(
                f"the config file {path} (LMC_CONFIG) does not exist",
                hint="create it, or unset LMC_CONFIG",
            ) from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"the config file {path} is not valid TOML: {exc}", hint="fix or remove it"
        ) from exc


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


def _checked(layer: Mapping[str, object], origin: str) -> dict[str, Any]:
    """The settings of one layer (file top level, a profile, ...), each checked."""
    values: dict[str, Any] = {}
    for key, raw in _flatten(layer, origin).items():
        spec = BY_KEY.get(key)
        if spec is None or not spec.setting:
            known = ", ".join(KEYS)
            raise ConfigError(f"unknown setting {key!r} in {origin}", hint=f"known: {known}")
        values[key] = convert(spec, raw, origin)
    return values


def _mcp_servers(section: object, origin: str) -> dict[str, Any]:
    if section is None:
        return {}
    from lmc.mcp.config import parse_servers

    return dict(parse_servers(section, origin))


def _codex_servers(section: object, origin: str) -> dict[str, Any]:
    """Codex's ``[mcp_servers.NAME]`` tables, an alias of ``[mcp.servers.NAME]``."""
    if section is None:
        return {}
    from lmc.mcp.config import parse_codex_servers

    return dict(parse_codex_servers(section, origin))


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
    # Named on the command line: used even where the config says enabled = false.
    return {name: dataclasses.replace(servers[name], enabled=True) for name in chosen}


@dataclasses.dataclass
class _Layer:
    """One profile (or the top level) of the file, checked."""

    values: dict[str, Any]
    servers: dict[str, Any]


def _layer(table: Mapping[str, object], origin: str) -> _Layer:
    settings = {k: v for k, v in table.items() if k not in _SPECIAL}
    servers = _codex_servers(table.get("mcp_servers"), origin)  # lmc's own tables win
    servers.update(_mcp_servers(table.get("mcp"), origin))
    return _Layer(_checked(settings, origin), servers)


def _read_layers(document: Mapping[str, Any], path: Path) -> tuple[_Layer, dict[str, _Layer]]:
    """The top level and every profile, all checked now (a typo in a profile not in use
    is found the first time the file is read, not the day it is picked)."""
    origin = f"config file {path}"
    settings_tables = {*_SECTIONS, *_TABLE_VALUED, "mcp", "mcp_servers"}
    top = {k: v for k, v in document.items() if not isinstance(v, dict) or k in settings_tables}
    profiles = {
        name: _layer(table, f"profile {name!r}")
        for name, table in document.items()
        if isinstance(table, dict) and name not in settings_tables
    }
    return _layer(top, origin), profiles


def _from_env(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    found: dict[str, tuple[Any, str]] = {}
    for spec in SETTINGS:
        variable = spec.variable
        if variable is not None and variable in env:
            found[spec.key] = (convert(spec, env[variable], variable), variable)
    return found


def load_settings(
    flags: Mapping[str, object] | None = None,
    *,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """Merge defaults < file < profile < ``LMC_*`` environment < flags (``None`` flags skip).

    Zero and false are values: only None (a flag not given) leaves the layer below."""
    env = os.environ if env is None else env
    required = path is None and bool(env.get("LMC_CONFIG"))
    path = config_path(env) if path is None else path
    document = _read_file(path, required)
    top, profiles = _read_layers(document, path)

    chosen = profile or env.get(_PROFILE.variable or "") or document.get("profile")
    if chosen is not None and not isinstance(chosen, str):
        raise ConfigError(f"profile in {path} must be a string, not {chosen!r}")

    sources = dict.fromkeys(top.values, f"config file {path}")
    values = dict(top.values)
    servers = dict(top.servers)
    if chosen:
        if chosen not in profiles:
            names = ", ".join(sorted(profiles)) or "none defined"
            raise ConfigError(f"no profile named {chosen!r} in {path}", hint=f"profiles: {names}")
        values.update(profiles[chosen].values)
        sources.update(dict.fromkeys(profiles[chosen].values, f"profile {chosen!r}"))
        servers.update(profiles[chosen].servers)
    for key, (value, variable) in _from_env(env).items():
        values[key] = value
        sources[key] = variable

    given = {k: v for k, v in (flags or {}).items() if v is not None}
    mcp_servers = _choose_mcp(servers, given.pop("mcp", None), given.pop("no_mcp", None))
    flagged = _checked(given, "flags")
    values.update(flagged)
    sources.update(dict.fromkeys(flagged, "flag"))

    settings = Settings(**values, mcp_servers=mcp_servers)
    settings.sources = {spec.key: sources.get(spec.key, "default") for spec in SETTINGS}
    settings.sources["mcp_servers"] = "file" if servers else "default"
    return settings
