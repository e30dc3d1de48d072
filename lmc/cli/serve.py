"""``lmc serve``: the agent over a websocket (Open Interpreter's protocol) and a chat page.

Settings come from the same options, config file and ``LMC_*`` variables as ``lmc run``.
The in-process model is loaded once, before the URL is printed, and shared by every
connection (generations take turns); with ``--api-base`` each connection talks to the
server on its own, in parallel. The token is printed with the URL, as Jupyter does, unless
``LMC_SERVER_TOKEN`` sets it; listening beyond loopback without one is refused.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
from collections.abc import Callable
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
from lmc.errors import LmcError
from lmc.messages.sanitize import for_terminal
from lmc.settings import Settings

__all__ = ["TOKEN_VARIABLE", "computer_factory", "serve"]

TOKEN_VARIABLE = "LMC_SERVER_TOKEN"
#: uvicorn's own frame limit, above the protocol's 50 MB so that the app answers an
#: oversized frame with an error chunk instead of the socket closing.
_WS_MAX_SIZE = 64 * 1024 * 1024


_MAX_PORT = 65535
#: What the server extra brings; uvicorn alone serves the page but no websocket.
_SERVER_PARTS = ("starlette", "uvicorn", "websockets")


def missing_server_parts() -> list[str]:
    """The server extra's packages that cannot be imported here."""
    missing = []
    for name in _SERVER_PARTS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def _err(text: str) -> None:
    sys.stderr.write(f"lmc: {for_terminal(text)}\n")  # may carry a server's or the model's words
    sys.stderr.flush()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise LmcError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def computer_factory(settings: Settings) -> Callable[[], Any]:
    """Fresh computers contained as ``settings`` ask (the policy is resolved once, here)."""
    policy = sandbox_for(settings)

    def make_computer() -> Any:
        from lmc.computer import Computer
        from lmc.computer.gateway import gateway_config

        return Computer(
            sandbox=policy.mode,
            network=policy.network,
            workdir=policy.workdir,
            hide=settings.sandbox_hide,
            block_timeout=settings.block_timeout,
            gateway=gateway_config(settings),  # kernels on a gateway, when one is set
        )

    return make_computer


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _install_hint(extra: str) -> str:
    from lmc.extras import install_hint

    return install_hint(extra)


def _cannot_serve(port: int) -> int | None:
    """The exit status when the port or the installed extras rule serving out, else None."""
    if not 0 <= port <= _MAX_PORT:
        _err(f"error: --port must be a number from 0 to {_MAX_PORT}, not {port}")
        return EXIT_USAGE
    missing = missing_server_parts()
    if missing:  # before any URL: without websockets the page would only ever reconnect
        _err(
            f"error: lmc serve needs the server extra (missing: {', '.join(missing)}): "
            f"{_install_hint('server')}"
        )
        return 1
    return None


def serve(options: SharedOptions, host: str, port: int) -> int:
    """Serve until Ctrl-C; 0 then, 1 on an error, 2 on bad usage."""
    refused = _cannot_serve(port)
    if refused is not None:
        return refused
    from lmc.server.security import is_loopback, new_token

    token = os.environ.get(TOKEN_VARIABLE) or None
    if token is None and not is_loopback(host):
        _err(
            f"error: refusing to listen on {host} without a token: anyone who can reach it "
            f"could run code here. Set {TOKEN_VARIABLE}, or listen on 127.0.0.1."
        )
        return EXIT_USAGE
    try:
        import uvicorn

        from lmc.server.app import ServerConfig, create_app
        from lmc.server.protocols import uvicorn_config
        from lmc.server.security import keep_out_of_logs
    except ImportError as exc:
        _err(f"error: lmc serve needs the server extras ({exc.name}): {_install_hint('server')}")
        return 1
    verbose = options.verbose
    loader: Any = None
    try:
        settings = settings_for(options)
        verbose = settings.verbose
        check_kernel_gateway(settings)  # each connection gets its own kernels there
        sock = _bind(host, port)
        shared = None
        from lmc.backends import is_server_shortcut

        if not (settings.api_base or is_server_shortcut(settings.model)):  # one model, shared
            what = settings.model or "the default model"
            _err(f"loading {what}…")
            loader = make_interpreter(settings)
            loader.load()
            shared = loader.backend

        def factory(conversation_id: str | None, backend: Any, computer: Any = None) -> Any:
            return make_interpreter(settings, conversation_id, backend=backend, computer=computer)

        config = ServerConfig(
            token=token or new_token(),
            make_interpreter=factory,
            make_computer=computer_factory(settings),
            shared_backend=shared,
            auto_run=settings.auto_run,
            db_path=settings.db_path,
            bound_host=host,
            extra_hosts=tuple((settings.server_allowed_hosts or "").split(",")),
        )
        app = create_app(config)
    except LmcError as exc:
        if loader is not None:
            loader.close()
        return report(exc, verbose=verbose)
    bound_port = int(sock.getsockname()[1])
    url = _url(host, bound_port)
    announce = (
        f"lmc serve: listening on {url}\n"
        f"  open the chat page: {url}?token={config.token}\n"
        "  websocket clients send first: "
        + ('{"auth": "$LMC_SERVER_TOKEN"}' if token else f'{{"auth": "{config.token}"}}')
        + "\n  Ctrl-C stops the server.\n"
    )

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                sys.stdout.write(announce)
                sys.stdout.flush()

    server = _Server(
        uvicorn_config(
            app,
            config.limits.protocol(),
            max_frame_bytes=_WS_MAX_SIZE,
            log_level="info" if verbose else "warning",
            lifespan="on",
        )
    )
    forget_token = keep_out_of_logs(config.token)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shut down cleanly, then re-raised the Ctrl-C
        pass
    finally:
        forget_token()
        sock.close()
        if loader is not None:
            loader.close()
    return 0
