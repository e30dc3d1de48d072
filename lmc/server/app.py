"""The ASGI app: the websocket at ``/``, the chat page, heartbeat and stored conversations.

:func:`create_app` takes everything it serves from a :class:`ServerConfig`; it opens no model
itself. The CLI (``lmc serve``) builds the config: the token, a factory for one Interpreter
per connection, and, for the in-process model, the one backend all connections share by
taking turns at a :class:`~lmc.server.turns.Gate`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from lmc.agent.storage import ConversationStore
from lmc.backends.base import Backend
from lmc.errors import LmcError
from lmc.server.connection import Connection, conversation_chunk, describe, error_chunk
from lmc.server.inbound import MAX_FRAME_BYTES
from lmc.server.security import origin_allowed, token_from_headers, token_matches
from lmc.server.turns import Gate, TurnTakingBackend
from lmc.terminal.json_lines import chunk_json

__all__ = ["InterpreterFactory", "ServerConfig", "create_app", "static_dir"]

log = logging.getLogger("lmc.server")

#: ``factory(conversation_id, backend)``: a new Interpreter resuming ``conversation_id`` (or
#: starting one when None), on ``backend`` when given, else on a backend of its own.
InterpreterFactory = Callable[[str | None, Backend | None], Any]


@dataclass
class ServerConfig:
    token: str
    make_interpreter: InterpreterFactory
    #: The in-process model all connections share, one generation at a time; None when
    #: each Interpreter opens its own backend (an OpenAI-compatible server: in parallel).
    shared_backend: Backend | None = None
    auto_run: bool = False
    db_path: str | Path | None = None
    max_frame_bytes: int = MAX_FRAME_BYTES
    gate: Gate = field(default_factory=Gate)


def static_dir() -> Path:
    return Path(str(resources.files("lmc.server") / "static"))


class _OriginCheck:
    """Refuses browser requests and websockets from another origin (403)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            if not origin_allowed(headers):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await JSONResponse({"error": "cross-origin request refused"}, 403)(
                        scope, receive, send
                    )
                return
        await self.app(scope, receive, send)


def create_app(config: ServerConfig) -> Starlette:
    store = ConversationStore(config.db_path)

    def authorized(request: Request) -> bool:
        return token_matches(token_from_headers(request.headers), config.token)

    def refuse() -> JSONResponse:
        return JSONResponse({"error": "a token is needed: X-API-KEY or Authorization: Bearer"}, 401)

    async def page(request: Request) -> Response:
        return FileResponse(static_dir() / "index.html", headers={"Cache-Control": "no-store"})

    async def heartbeat(request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def conversations(request: Request) -> Response:
        if not authorized(request):
            return refuse()
        listed = [
            {
                "id": c.id,
                "title": c.title,
                "created_at": c.created_at,
                "updated_at": c.updated_at,
                "message_count": c.message_count,
            }
            for c in store.list_conversations()
        ]
        return JSONResponse(listed)

    async def conversation(request: Request) -> Response:
        if not authorized(request):
            return refuse()
        try:
            info = store.get(request.path_params["conversation_id"])
            messages = store.load(info.id)
        except LmcError as exc:
            return JSONResponse({"error": str(exc)}, 404)
        return JSONResponse(
            {
                "id": info.id,
                "title": info.title,
                "created_at": info.created_at,
                "updated_at": info.updated_at,
                "messages": messages,
            }
        )

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        try:
            if not await _authenticate(ws, config.token):
                return
            await _converse(ws, config)
        except WebSocketDisconnect:
            return

    app = Starlette(
        routes=[
            Route("/", page),
            WebSocketRoute("/", websocket),
            Route("/heartbeat", heartbeat),
            Route("/conversations", conversations),
            Route("/conversations/{conversation_id}", conversation),
            Mount("/static", StaticFiles(directory=static_dir()), name="static"),
        ],
        lifespan=_closing(store),
    )
    app.add_middleware(_OriginCheck)
    app.state.config = config
    return app


def _closing(store: ConversationStore) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    return lifespan


async def _authenticate(ws: WebSocket, token: str) -> bool:
    """Answer ``{"auth": false}`` to every frame until one is ``{"auth": TOKEN}``."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return False
        text = message.get("text")
        try:
            data = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and token_matches(data.get("auth"), token):
            await ws.send_text(json.dumps({"auth": True}))
            return True
        await ws.send_text(json.dumps({"auth": False}))


async def _converse(ws: WebSocket, config: ServerConfig) -> None:
    view: TurnTakingBackend | None = None
    if config.shared_backend is not None:
        view = TurnTakingBackend(config.shared_backend, config.gate)
    resume = ws.query_params.get("conversation") or None
    try:
        interpreter = await asyncio.to_thread(config.make_interpreter, resume, view)
    except Exception as exc:
        if not isinstance(exc, LmcError):
            log.exception("cannot open the conversation")
        await ws.send_text(chunk_json(error_chunk(describe(exc))))
        await ws.close(code=1008)
        return
    connection = Connection(
        interpreter,
        ws.send_text,
        auto_run=config.auto_run,
        stop_waiting=view.stop_waiting if view is not None else lambda: None,
        max_bytes=config.max_frame_bytes,
    )
    if view is not None:
        view.on_queued = connection.queued
    try:
        if interpreter.conversation_id is not None:
            connection.emit(conversation_chunk(interpreter.conversation_id))
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                break
            if message.get("text") is not None:
                await connection.text(message["text"])
            elif message.get("bytes") is not None:
                await connection.binary(message["bytes"])
    finally:
        await connection.close()
