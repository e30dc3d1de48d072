"""The ASGI app: the websocket at ``/``, the chat page, heartbeat and stored conversations.

:func:`create_app` takes everything it serves from a :class:`ServerConfig`; it opens no model
itself. The CLI (``lmc serve``) builds the config: the token, a factory for one Interpreter
per connection, and, for the in-process model, the one backend all connections share by
taking turns at a :class:`~lmc.server.turns.Gate`. Serve it with
:func:`lmc.server.protocols.uvicorn_config`, whose protocols enforce the limits that only
the server can (header time, connection count, the frame limit before authentication).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from lmc.agent.storage import ConversationStore
from lmc.backends.base import Backend
from lmc.errors import LmcError
from lmc.server.connection import Connection, conversation_chunk, describe, error_chunk
from lmc.server.inbound import MAX_FRAME_BYTES, Problem, parse_frame
from lmc.server.kernels import KernelSlots, SlottedComputer
from lmc.server.protocols import FRAME_LIMIT_EXTENSION, ProtocolLimits
from lmc.server.security import (
    AuthThrottle,
    allowed_hosts,
    host_allowed,
    origin_allowed,
    token_from_headers,
    token_matches,
)
from lmc.server.turns import Gate, TurnTakingBackend
from lmc.terminal.json_lines import chunk_json

__all__ = [
    "SECURITY_HEADERS",
    "InterpreterFactory",
    "ServerConfig",
    "ServerLimits",
    "create_app",
    "static_dir",
]

log = logging.getLogger("lmc.server")

#: ``factory(conversation_id, backend[, computer])``: a new Interpreter resuming
#: ``conversation_id`` (or starting one when None), on ``backend`` when given, else on a
#: backend of its own; on ``computer`` (passed only when the config has ``make_computer``).
InterpreterFactory = Callable[..., Any]

#: On every HTTP response: the page loads only its own scripts and styles, talks only to
#: this server, and cannot be framed by another site.
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; media-src 'self' data: blob:; connect-src 'self'; "
        "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_HEADER_BYTES = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]


@dataclass
class ServerLimits:
    """What one client, or many, may hold of the server (seconds, bytes, counts)."""

    #: A request's headers must be complete this long after the connection (or the first
    #: byte of the next request); a websocket must authenticate this long after opening.
    header_timeout: float = 20.0
    auth_timeout: float = 20.0
    #: Open connections (HTTP and websocket); past it: HTTP 503.
    max_connections: int = 64
    #: Open connections from one client address (a browser opens about 6 a site).
    max_per_address: int = 16
    #: The largest frame before authentication (after it: ``max_frame_bytes``).
    pre_auth_max_bytes: int = 8192
    #: Kernels for all connections together; past it a block waits (``queued``) at most
    #: ``kernel_wait`` seconds for one to free.
    max_kernels: int = 8
    kernel_wait: float = 600.0
    #: How long a block waits for the person's go / decline before it is declined.
    confirm_timeout: float = 3600.0
    #: How long a generation waits for the shared model (busy with other connections).
    model_wait: float = 1800.0

    def protocol(self) -> ProtocolLimits:
        return ProtocolLimits(
            header_timeout=self.header_timeout,
            max_connections=self.max_connections,
            max_per_address=self.max_per_address,
            pre_auth_max_bytes=self.pre_auth_max_bytes,
        )


@dataclass
class ServerConfig:
    token: str
    make_interpreter: InterpreterFactory
    #: The in-process model all connections share, one generation at a time; None when
    #: each Interpreter opens its own backend (an OpenAI-compatible server: in parallel).
    shared_backend: Backend | None = None
    #: A fresh :class:`lmc.Computer` for a connection (its kernels start on first code);
    #: None: the Interpreter makes its own (and starts python with the first turn).
    make_computer: Callable[[], Any] | None = None
    auto_run: bool = False
    db_path: str | Path | None = None
    max_frame_bytes: int = MAX_FRAME_BYTES
    gate: Gate = field(default_factory=Gate)
    #: The address the server listens on, and more host names it answers to.
    bound_host: str | None = "127.0.0.1"
    extra_hosts: tuple[str, ...] = ()
    limits: ServerLimits = field(default_factory=ServerLimits)
    throttle: AuthThrottle = field(default_factory=AuthThrottle)
    #: How a throttled answer waits (tests replace it to hold the answer).
    auth_delay: Callable[[float], Awaitable[None]] = anyio.sleep


def static_dir() -> Path:
    return Path(str(resources.files("lmc.server") / "static"))


class _Guard:
    """Refuses requests and websockets naming another host (DNS rebinding) or coming from
    another origin, and puts :data:`SECURITY_HEADERS` on every HTTP response."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = None
        if not host_allowed(headers.get("host"), self.hosts):
            refusal = "this server does not answer to that host name"
        elif not origin_allowed(headers):
            refusal = "cross-origin request refused"
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                response = JSONResponse({"error": refusal}, 403, headers=SECURITY_HEADERS)
                await response(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADER_BYTES]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _Endpoints:
    """The routes' handlers, over one store, one config and the server's kernel slots."""

    def __init__(self, config: ServerConfig, store: ConversationStore, slots: KernelSlots) -> None:
        self.config = config
        self.store = store
        self.slots = slots

    def _authorized(self, request: Request) -> bool:
        return token_matches(token_from_headers(request.headers), self.config.token)

    @staticmethod
    def _refuse() -> JSONResponse:
        return JSONResponse({"error": "a token is needed: X-API-KEY or Authorization: Bearer"}, 401)

    async def page(self, request: Request) -> Response:
        return FileResponse(static_dir() / "index.html", headers={"Cache-Control": "no-store"})

    async def heartbeat(self, request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    def _listed(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c.id,
                "title": c.title,
                "created_at": c.created_at,
                "updated_at": c.updated_at,
                "message_count": c.message_count,
            }
            for c in self.store.list_conversations()
        ]

    async def conversations(self, request: Request) -> Response:
        if not self._authorized(request):
            return self._refuse()
        return JSONResponse(await anyio.to_thread.run_sync(self._listed))

    def _one(self, conversation_id: str) -> dict[str, Any]:
        info = self.store.get(conversation_id)
        return {
            "id": info.id,
            "title": info.title,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "messages": self.store.load(info.id),
        }

    async def conversation(self, request: Request) -> Response:
        if not self._authorized(request):
            return self._refuse()
        try:
            found = await anyio.to_thread.run_sync(
                self._one, request.path_params["conversation_id"]
            )
        except LmcError as exc:
            return JSONResponse({"error": str(exc)}, 404)
        return JSONResponse(found)

    async def websocket(self, ws: WebSocket) -> None:
        await ws.accept()
        try:
            authenticated: bool | None = None
            with anyio.move_on_after(self.config.limits.auth_timeout):
                authenticated = await _authenticate(ws, self.config)
            if authenticated is None:
                await ws.close(code=1008, reason="not authenticated in time")
                return
            if authenticated:
                _raise_frame_limit(ws)
                await _converse(ws, self.config, self.slots, ws.app.state.turns)
        except WebSocketDisconnect:
            return


def create_app(config: ServerConfig) -> Starlette:
    store = ConversationStore(config.db_path)
    slots = KernelSlots(config.limits.max_kernels)
    endpoints = _Endpoints(config, store, slots)
    app = Starlette(
        routes=[
            Route("/", endpoints.page),
            WebSocketRoute("/", endpoints.websocket),
            Route("/heartbeat", endpoints.heartbeat),
            Route("/conversations", endpoints.conversations),
            Route("/conversations/{conversation_id}", endpoints.conversation),
            Mount("/static", StaticFiles(directory=static_dir()), name="static"),
        ],
        lifespan=_lifespan(store, config),
    )
    app.add_middleware(_Guard, hosts=allowed_hosts(config.bound_host, config.extra_hosts))
    app.state.config = config
    app.state.kernel_slots = slots
    return app


def _lifespan(
    store: ConversationStore, config: ServerConfig
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Turns run in threads of their own pool, so that they never starve the default one
        # (SQLite reads, Interpreter start and close).
        app.state.turns = anyio.CapacityLimiter(config.limits.max_connections)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(store.close)

    return lifespan


def _client(ws: WebSocket) -> str:
    return ws.client.host if ws.client is not None else "?"


async def _authenticate(ws: WebSocket, config: ServerConfig) -> bool:
    """Answer ``{"auth": false}`` to every frame until one is ``{"auth": TOKEN}``; a wrong
    token's answer comes only after the throttle's delay."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return False
        text = message.get("text")
        data = parse_frame(text) if text is not None else None
        given = data.get("auth") if isinstance(data, dict) else None
        if token_matches(given, config.token):
            await ws.send_text('{"auth": true}')
            return True
        if given is not None and not isinstance(data, Problem):
            delay = config.throttle.failed(_client(ws))
            if delay > 0:
                await config.auth_delay(delay)
        await ws.send_text('{"auth": false}')


def _raise_frame_limit(ws: WebSocket) -> None:
    """After authentication, frames up to the server's full limit."""
    extension = ws.scope.get("extensions", {}).get(FRAME_LIMIT_EXTENSION)
    if extension is not None:
        extension["raise"]()


async def _converse(
    ws: WebSocket, config: ServerConfig, slots: KernelSlots, turns: anyio.CapacityLimiter
) -> None:
    view: TurnTakingBackend | None = None
    if config.shared_backend is not None:
        view = TurnTakingBackend(
            config.shared_backend, config.gate, wait_timeout=config.limits.model_wait
        )
    resume = ws.query_params.get("conversation") or None
    computer: SlottedComputer | None = None
    try:
        if config.make_computer is not None:
            inner = await anyio.to_thread.run_sync(config.make_computer)
            computer = SlottedComputer(inner, slots, wait_timeout=config.limits.kernel_wait)
            interpreter = await anyio.to_thread.run_sync(
                config.make_interpreter, resume, view, computer
            )
        else:
            interpreter = await anyio.to_thread.run_sync(config.make_interpreter, resume, view)
    except Exception as exc:
        if computer is not None:
            await anyio.to_thread.run_sync(computer.close)
        if not isinstance(exc, LmcError):
            log.exception("cannot open the conversation")
        await ws.send_text(chunk_json(error_chunk(describe(exc))))
        await ws.close(code=1008)
        return
    async with anyio.create_task_group() as group:
        connection = Connection(
            interpreter,
            ws.send_text,
            group,
            auto_run=config.auto_run,
            stop_waiting=view.stop_waiting if view is not None else lambda: None,
            max_bytes=config.max_frame_bytes,
            confirm_timeout=config.limits.confirm_timeout,
            limiter=turns,
        )
        if view is not None:
            view.on_queued = connection.queued
        if computer is not None:
            computer.on_queued = connection.queued
        try:
            if interpreter.conversation_id is not None:
                connection.emit(conversation_chunk(interpreter.conversation_id))
            await _receive_all(ws, connection)
        finally:
            await connection.close()
            if computer is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(computer.close)
            group.cancel_scope.cancel()


async def _receive_all(ws: WebSocket, connection: Connection) -> None:
    """Hand every frame to the connection until the client leaves. A frame whose handling
    fails (a bug: the reader does not raise) is reported to the client and logged in one
    line; the connection goes on."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        try:
            if message.get("text") is not None:
                await connection.text(message["text"])
            elif message.get("bytes") is not None:
                await connection.binary(message["bytes"])
        except Exception as exc:
            log.error("a client's frame could not be handled: %s", describe(exc))
            log.debug("the frame's failure", exc_info=True)
            connection.emit(error_chunk(describe(exc)))
