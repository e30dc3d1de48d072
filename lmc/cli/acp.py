"""``lmc acp``: serve an editor over the Agent Client Protocol on stdin/stdout.

Settings come from the same options, config file and ``LMC_*`` variables as ``lmc run``.
A mistake in them is one line on stderr and exit status 1 or 2, before a byte of protocol.
Then stdout belongs to the protocol, logs go to stderr (never waited for: see
:mod:`lmc.acp.stdio`), and lmc serves until the editor closes stdin (or sends SIGTERM), then
stops every turn, closes every kernel and MCP server and exits.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from lmc.cli.options import SharedOptions
from lmc.cli.session import (
    EXIT_USAGE,
    check_kernel_gateway,
    make_interpreter,
    report,
    sandbox_for,
    settings_for,
)
from lmc.errors import ConfigError, LmcError, SandboxUnavailableError
from lmc.messages.sanitize import for_terminal
from lmc.settings import Settings

__all__ = ["run_acp"]


class SanitizedFormatter(logging.Formatter):
    """Log lines carry a server's, an MCP server's or the model's words; an editor may show
    its agent's stderr in a terminal, so none of their escape sequences get through."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))


def _checked_settings(options: SharedOptions) -> Settings:
    """The settings, with everything a session will need checked now (one line if not)."""
    from lmc.agent.approvals import Approvals

    settings = settings_for(options)
    check_kernel_gateway(settings)
    sandbox_for(settings)  # a sandbox asked for in vain fails now, not at the first block
    try:
        Approvals.from_config(settings.approve_allow)
    except ValueError as exc:
        raise ConfigError(f"approve.allow: {exc}", hint="fix it in the config file") from exc
    return settings


def _shared_model(settings: Settings) -> Any:
    """The in-process model, shared by the sessions (None: each talks to its server)."""
    from lmc.backends import is_server_shortcut

    if settings.api_base or is_server_shortcut(settings.model):
        return None
    from lmc.acp import SharedModel

    def open_model() -> Any:
        from lmc.agent.pieces import backend_config
        from lmc.backends import open_backend

        logging.getLogger("lmc.acp").info("loading %s", settings.model or "the default model")
        return open_backend(backend_config(settings, None))

    model = SharedModel(open_model)
    model.start()
    return model


def run_acp(options: SharedOptions) -> int:
    """Serve until stdin closes; 0 then, 1 on an error, 2 on bad usage."""
    from lmc.terminal.signals import closing, exit_status, terminate_like_interrupt

    verbose = options.verbose
    try:
        settings = _checked_settings(options)
    except SandboxUnavailableError as exc:
        report(exc, verbose=verbose)
        return EXIT_USAGE
    except LmcError as exc:
        return report(exc, verbose=verbose)
    from lmc import __version__
    from lmc.acp import Agent, Sessions, Wire, take_stdio

    pipes = take_stdio()
    log = logging.StreamHandler(sys.stderr)
    log.setFormatter(SanitizedFormatter("lmc acp: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if settings.verbose else logging.WARNING, handlers=[log])
    model = _shared_model(settings)

    queued: dict[str, Any] = {}  # each session's view of the shared model

    def make(session_settings: Settings, conversation_id: str) -> Any:
        backend = queued[conversation_id] = model.for_session() if model is not None else None
        return make_interpreter(session_settings, conversation_id, backend=backend)

    def stop_waiting(conversation_id: str) -> None:
        backend = queued.get(conversation_id)
        if backend is not None:
            backend.stop_waiting()

    wire = Wire(pipes.out_fd)
    agent = Agent(wire, Sessions(settings, wire, make, stop_waiting), __version__)
    with terminate_like_interrupt():
        try:
            agent.serve(pipes.reader)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the same orderly close
            pass
        finally:
            with closing():
                agent.close()
                if model is not None:
                    model.close()
                pipes.flush_log()
    return exit_status(0)
