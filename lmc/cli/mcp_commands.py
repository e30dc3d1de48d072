"""``lmc mcp list`` and ``lmc mcp serve``: MCP servers for lmc, and lmc as an MCP server."""

from __future__ import annotations

import inspect
import sys
from typing import TYPE_CHECKING, Annotated, Any

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


def _require_mcp() -> None:
    """One line and exit 1 when the mcp extra is not installed."""
    from lmc.cli.session import report
    from lmc.errors import MissingExtraError
    from lmc.extras import require

    try:
        require("mcp")
    except MissingExtraError as exc:
        raise typer.Exit(report(exc, verbose=False)) from None


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
        failed += _print_status(status)
    disabled = [c.name for c in settings.mcp_servers.values() if not c.enabled]
    if disabled:
        print(f"disabled (enabled = false): {', '.join(disabled)}")
    return 1 if failed else 0


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _line(text: str) -> None:
    from lmc.messages.sanitize import for_terminal

    print(for_terminal(text))


def _print_status(status: ServerStatus) -> int:
    """Print one server's block; 1 when it did not start. Names and descriptions come from
    the server, so each line is sanitized for the terminal."""
    config = status.config
    _line(f"{config.name} ({config.transport}: {config.describe()})")
    if not status.started:
        _line(f"  ✗ {status.error}")
        return 1
    offered = [_count(len(status.tools), "tool")]
    offered += [_count(len(status.resources), "resource"), _count(len(status.prompts), "prompt")]
    _line(f"  ✓ started, {', '.join(offered)}")
    for note in status.notes:
        _line(f"  ! {note}")
    width = max((len(tool.name) for tool in status.tools), default=0)
    for tool in status.tools:
        auto = " (auto-approved)" if tool.name in config.auto_approve else ""
        _line(f"    {tool.name:<{width}}  {_first_line(tool.description)}{auto}")
    if status.resources:
        _line("  resources:")
        for res in status.resources:
            _line(f"    {res.uri}  {res.name}")
    if status.prompts:
        _line("  prompts:")
        for prompt in status.prompts:
            args = ", ".join(name + ("" if needed else "?") for name, needed in prompt.arguments)
            _line(f"    {prompt.name}({args})  {_first_line(prompt.description)}")
    return 0


@mcp_app.command("list")
@with_options("mcp list")
def list_command(**given: Any) -> None:
    """Start each configured MCP server and list its tools (or why it did not start)."""
    _require_mcp()
    raise typer.Exit(list_servers(SharedOptions(**given)))


def login(options: SharedOptions, name: str) -> int:
    """Sign in to one HTTP server with OAuth (the browser part), keeping its token."""
    import dataclasses

    from lmc.cli.session import report, settings_for
    from lmc.errors import LmcError
    from lmc.mcp.client import McpManager
    from lmc.mcp.oauth import SIGN_IN_WAIT, token_path

    try:
        settings = settings_for(SharedOptions(**{**options.given, "mcp": (name,)}))
    except LmcError as exc:
        return report(exc, verbose=False)
    config = settings.mcp_servers[name]
    if config.url is None:
        print(f"lmc: MCP server {name!r} runs on stdio: there is nothing to sign in to")
        return 2
    patient = dataclasses.replace(
        config, oauth=True, startup_timeout=max(config.start_within, SIGN_IN_WAIT + 30)
    )
    with McpManager({name: patient}) as manager:
        [status] = manager.statuses()
    if not status.started:
        _line(f"lmc: {status.error}")
        return 1
    print(f"signed in to {name}; its token is kept in {token_path(name)}")
    if not config.oauth:
        print(f"lmc: hint: set oauth = true in [mcp.servers.{name}] to use it")
    return 0


_NAME = inspect.Parameter(
    "name",
    inspect.Parameter.KEYWORD_ONLY,
    annotation=Annotated[str, typer.Argument(help="The HTTP server to sign in to.")],
)


@mcp_app.command("login")
@with_options("mcp list", before=[_NAME])
def login_command(name: str, **given: Any) -> None:
    """Sign in to an HTTP MCP server with OAuth (opens the browser; keeps the token, 0600)."""
    raise typer.Exit(login(SharedOptions(**given), name))


@mcp_app.command("serve")
@with_options("mcp serve")
def serve_command(**given: Any) -> None:
    """Serve lmc's kernels over MCP on stdio: tools run_code(language, code) and languages.

    Configure it in an MCP client as the command `lmc mcp serve`. Code runs as `lmc run`
    runs it (same settings, same sandbox), in kernels that keep their state for the session.
    """
    _require_mcp()
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
