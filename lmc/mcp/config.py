"""``[mcp.servers.NAME]`` tables of config.toml, checked into :class:`McpServerConfig`.

A server is started either as a subprocess speaking MCP on stdio (``command``, ``args``,
``env``, ``cwd``) or reached over streamable HTTP (``url``, ``headers``). ``tools`` keeps
only the tools named; ``auto_approve`` names the tools that run without asking; ``timeout``
bounds every call, in seconds, and the start too unless ``startup_timeout`` is given;
``enabled = false`` keeps a server configured but unused; ``oauth = true`` signs in to an HTTP
server with OAuth (``lmc mcp login NAME``). Every mistake is one :class:`ConfigError` line.

Codex's ``[mcp_servers.NAME]`` tables are read too, as an alias, with lmc's keys or Codex's
own names for them (``startup_timeout_sec``, ``tool_timeout_sec``, ``enabled_tools``,
``disabled_tools``, ``http_headers``, ``env_http_headers``, ``bearer_token_env_var``,
``env_vars``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lmc.errors import ConfigError

__all__ = [
    "DEFAULT_TIMEOUT",
    "McpServerConfig",
    "parse_codex_servers",
    "parse_server",
    "parse_servers",
]

DEFAULT_TIMEOUT: Final = 60.0

#: Server names become part of function names (``functions.NAME__TOOL``).
_NAME = re.compile(r"[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*")
_KEYS: Final = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "tools",
    "auto_approve",
    "timeout",
    "startup_timeout",
    "enabled",
    "oauth",
    "disabled_tools",
)
#: Codex's names for lmc's keys.
_CODEX_NAMES: Final = {
    "startup_timeout_sec": "startup_timeout",
    "tool_timeout_sec": "timeout",
    "enabled_tools": "tools",
    "http_headers": "headers",
}
#: Codex's keys read from the environment when the config is read.
_CODEX_ENV_KEYS: Final = ("env_http_headers", "bearer_token_env_var", "env_vars")


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server as the person configured it."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] | None = None  # None: every tool the server offers
    auto_approve: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    startup_timeout: float | None = None  # None: timeout
    enabled: bool = True
    oauth: bool = False
    disabled_tools: tuple[str, ...] = ()

    @property
    def start_within(self) -> float:
        """Seconds the server has to start and list its tools."""
        return self.timeout if self.startup_timeout is None else self.startup_timeout

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """Where it runs, for ``lmc mcp list`` and ``lmc doctor``."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)


def _strings(where: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, not {value!r}")
    return tuple(value)


def _table(where: str, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where}: {key} must be a table of strings, not {value!r}")
    return dict(value)


def _text(where: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string, not {value!r}")
    return value


def _check_table(where: str, name: str, table: object) -> Mapping[str, Any]:
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: the server name may hold letters, digits, '-' and single '_'",
            hint="it becomes part of the tool names the model calls (NAME__TOOL)",
        )
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}", hint=f"known: {', '.join(_KEYS)}")
    return table


def _transport(where: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """``command`` (stdio) or ``url`` (HTTP), exactly one."""
    values: dict[str, Any] = {}
    if "command" in table:
        values["command"] = _text(where, "command", table["command"])
    if "url" in table:
        url = _text(where, "url", table["url"])
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: url must start with http:// or https://, not {url!r}")
        values["url"] = url
    if ("command" in values) == ("url" in values):
        raise ConfigError(f"{where} needs either command (stdio) or url (streamable HTTP)")
    if "url" in values and any(k in table for k in ("args", "env", "cwd")):
        raise ConfigError(f"{where}: args, env and cwd are for stdio servers (with command)")
    if "command" in values and "headers" in table:
        raise ConfigError(f"{where}: headers are for HTTP servers (with url)")
    if "oauth" in table and "url" not in values:
        raise ConfigError(f"{where}: oauth is for HTTP servers (with url)")
    return values


def _typed_values(where: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """Every key but the transport's, each checked for its type."""
    values: dict[str, Any] = {}
    for key in ("enabled", "oauth"):
        if key in table and not isinstance(table[key], bool):
            raise ConfigError(f"{where}: {key} must be true or false, not {table[key]!r}")
    values.update({k: table[k] for k in ("enabled", "oauth") if k in table})
    for key in ("args", "tools", "auto_approve", "disabled_tools"):
        if key in table:
            values[key] = _strings(where, key, table[key])
    for key in ("env", "headers"):
        if key in table:
            values[key] = _table(where, key, table[key])
    if "cwd" in table:
        values["cwd"] = _text(where, "cwd", table["cwd"])
    for key in ("timeout", "startup_timeout"):
        if key in table:
            seconds = table[key]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
                raise ConfigError(f"{where}: {key} must be a positive number of seconds")
            values[key] = float(seconds)
    return values


def parse_server(
    name: str, table: object, origin: str = "config", section: str = "mcp.servers"
) -> McpServerConfig:
    """One ``[mcp.servers.NAME]`` table."""
    where = f"[{section}.{name}] ({origin})"
    checked = _check_table(where, name, table)
    values = _transport(where, checked)
    values.update(_typed_values(where, checked))
    return McpServerConfig(name=name, **values)


def parse_servers(section: object, origin: str = "config") -> dict[str, McpServerConfig]:
    """The ``[mcp]`` table: ``{"servers": {NAME: {...}}}``."""
    if not isinstance(section, Mapping):
        raise ConfigError(f"mcp ({origin}) must be a table with [mcp.servers.NAME] tables")
    unknown = sorted(set(section) - {"servers"})
    if unknown:
        raise ConfigError(f"unknown key mcp.{unknown[0]} ({origin})", hint="known: mcp.servers")
    servers = section.get("servers", {})
    if not isinstance(servers, Mapping):
        raise ConfigError(f"mcp.servers ({origin}) must hold [mcp.servers.NAME] tables")
    return {name: parse_server(name, table, origin) for name, table in servers.items()}


def _env_value(where: str, variable: object) -> str:
    if not isinstance(variable, str) or not variable:
        raise ConfigError(f"{where}: an environment variable name must be a string")
    value = os.environ.get(variable)
    if value is None:
        raise ConfigError(f"{where}: the environment variable {variable} is not set")
    return value


def _from_codex(name: str, table: object, origin: str) -> dict[str, Any]:
    """A Codex table in lmc's keys (environment values read now, as Codex does at start)."""
    where = f"[mcp_servers.{name}] ({origin})"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    out: dict[str, Any] = {
        _CODEX_NAMES.get(str(key), str(key)): value for key, value in table.items()
    }
    for key in _CODEX_ENV_KEYS:
        out.pop(key, None)
    headers = dict(_table(where, "http_headers", out.get("headers", {})))
    from_env = _table(where, "env_http_headers", table.get("env_http_headers", {}))
    for header, variable in from_env.items():
        headers[header] = _env_value(where, variable)
    if "bearer_token_env_var" in table:
        token = _env_value(where, table["bearer_token_env_var"])
        headers["Authorization"] = f"Bearer {token}"
    if headers:
        out["headers"] = headers
    if "env_vars" in table:
        env = dict(_table(where, "env", out.get("env", {})))
        for variable in _strings(where, "env_vars", table["env_vars"]):
            if variable in os.environ:
                env[variable] = os.environ[variable]
        out["env"] = env
    return out


def parse_codex_servers(section: object, origin: str = "config") -> dict[str, McpServerConfig]:
    """Codex's ``[mcp_servers.NAME]`` tables, read as an alias of ``[mcp.servers.NAME]``."""
    if not isinstance(section, Mapping):
        raise ConfigError(f"mcp_servers ({origin}) must hold [mcp_servers.NAME] tables")
    return {
        name: parse_server(name, _from_codex(name, table, origin), origin, "mcp_servers")
        for name, table in section.items()
    }
