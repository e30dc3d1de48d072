"""``lmc mcp list`` and ``lmc mcp serve``: MCP servers for lmc, and lmc as an MCP server."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from lmc.cli.options import SharedOptions, with_options

if TYPE_CHECKING:
    from lmc.config import Settings
    from lmc.mcp.client import ServerStatus

__all__ = ["mcp_app", "server_statuses"]

mcp_app = typer.Typer(
    help="MCP: list the configured servers' tools, or serve lmc's kernels to other agents.",
    rich_markup_mode=None,
    no_args_is_help=True,
)


def server_statuses(settings: Settings) -> list[ServerStatus]:
    """Start every configured server (in parallel, each bounded by its timeout) and stop them."""
    if not settings.mcp_servers:
        return []
    from lmc.mcp.client import McpManager

    with McpManager(settings.mcp_servers) as manager:
        return manager.statuses()


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def list_servers(options: SharedOptions) -> int:
    from lmc.cli.session import report, settings_for
    from lmc.config import config_path
    from lmc.errors import LmcError

    try:
        settings = settings_for(options)
    except LmcError as exc:
        return report(exc, verbose=False)
    if not settings.mcp_servers:
        print(f"no MCP servers configured: add [mcp.servers.NAME] to {config_path()}")
        return 0
    failed = 0
    for status in server_statuses(settings):
        config = status.config
        print(f"{config.name} ({config.transport}: {config.describe()})")
        if not status.started:
            failed += 1
            print(f"  ✗ {status.error}")
            continue
        print(f"  ✓ started, {len(status.tools)} tool{'s' if len(status.tools) != 1 else ''}")
        missing = status.missing_line()
        if missing is not None:
            print(f"  ! {missing}")
        width = max((len(tool.name) for tool in status.tools), default=0)
        for tool in status.tools:
            auto = " (auto-approved)" if tool.name in config.auto_approve else ""
            print(f"    {tool.name:<{width}}  {_first_line(tool.description)}{auto}")
    return 1 if failed else 0


@mcp_app.command("list")
@with_options("mcp list")
def list_command(**given: Any) -> None:
    """Start each configured MCP server and list its tools (or why it did not start)."""
    raise typer.Exit(list_servers(SharedOptions(**given)))


@mcp_app.command("serve")
@with_options("mcp serve")
def serve_command(**given: Any) -> None:
    """Serve lmc's kernels over MCP on stdio: tools run_code(language, code) and languages.

    Configure it in an MCP client as the command `lmc mcp serve`. Code runs as `lmc run`
    runs it (same settings, same sandbox), in kernels that keep their state for the session.
    """
    from lmc.cli.session import make_interpreter, report, settings_for
    from lmc.errors import LmcError
    from lmc.mcp.serve import serve_stdio

    options = SharedOptions(**given, no_mcp=True)
    verbose = options.verbose
    try:
        settings = settings_for(options)
    except LmcError as exc:
        raise typer.Exit(report(exc, verbose=verbose)) from None

    def make_computer() -> Any:
        # The computer `lmc run` would use: the Interpreter builds it from the settings.
        return make_interpreter(settings).computer

    try:
        serve_stdio(make_computer)
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        raise typer.Exit(report(exc, verbose=settings.verbose, err=sys.stderr)) from None
