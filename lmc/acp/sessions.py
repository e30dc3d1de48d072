"""Where sessions come from: a new stored conversation, or a stored one loaded again.

A session's id is its conversation's id in lmc's database, so it is known at once (the
conversation is created by session/new, before the first message) and ``lmc history``,
``lmc --resume`` and session/load all name the same thing. Its ``cwd`` becomes the working
directory of its kernels (the sandbox's writable folder); its ``mcpServers`` join the
configured ones and start the same way. A session nobody prompted leaves no empty
conversation behind when lmc exits.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmc.acp.session import Session
from lmc.acp.wire import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError, Wire
from lmc.agent.approvals import Approvals
from lmc.agent.storage import ConversationStore
from lmc.errors import LmcError
from lmc.messages import Message
from lmc.settings import Settings, settings_with

__all__ = ["MakeInterpreter", "Sessions", "mcp_tables"]

log = logging.getLogger("lmc.acp")

#: ``(settings, conversation_id)`` -> an Interpreter (the CLI's, on the shared model).
MakeInterpreter = Callable[[Settings, str], Any]


def _server_name(name: object, taken: set[str]) -> str:
    """An ACP server's display name as an lmc server name (it becomes NAME__TOOL)."""
    text = re.sub(r"[^A-Za-z0-9-]+", "-", str(name or "")).strip("-") or "server"
    candidate, n = text, 1
    while candidate in taken:
        n += 1
        candidate = f"{text}-{n}"
    taken.add(candidate)
    return candidate


def _pairs(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise RpcError(INVALID_PARAMS, f"invalid params: {what} must be a list")
    pairs: dict[str, str] = {}
    for item in value:
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("name", "value")
        ):
            raise RpcError(INVALID_PARAMS, f"invalid params: {what} holds name/value pairs")
        pairs[item["name"]] = item["value"]
    return pairs


def mcp_tables(servers: object, configured: dict[str, Any]) -> dict[str, Any]:
    """ACP's ``mcpServers`` as lmc's server tables (as config.toml writes them)."""
    if servers is None:
        return {}
    if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
        raise RpcError(INVALID_PARAMS, "invalid params: mcpServers must be a list of servers")
    taken = set(configured)
    tables: dict[str, Any] = {}
    for server in servers:
        name = _server_name(server.get("name"), taken)
        kind = server.get("type")
        if kind in ("http", "sse") or "url" in server:
            if kind == "sse":
                raise RpcError(
                    INVALID_PARAMS, "lmc reaches MCP servers over stdio or HTTP, not SSE"
                )
            tables[name] = {
                "url": server.get("url"),
                "headers": _pairs(server.get("headers"), "headers"),
            }
        else:
            args = server.get("args") or []
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise RpcError(INVALID_PARAMS, "invalid params: an MCP server's args are strings")
            tables[name] = {
                "command": server.get("command"),
                "args": args,
                "env": _pairs(server.get("env"), "env"),
            }
    return tables


def _cwd(params: dict[str, Any]) -> str:
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise RpcError(INVALID_PARAMS, "invalid params: cwd must be an absolute path")
    if not Path(cwd).is_dir():
        raise RpcError(INVALID_PARAMS, f"invalid params: cwd {cwd} is not a directory")
    return cwd


class Sessions:
    """The sessions of one ``lmc acp`` process."""

    def __init__(
        self,
        settings: Settings,
        wire: Wire,
        make_interpreter: MakeInterpreter,
        stop_waiting: Callable[[str], None] = lambda conversation_id: None,
    ) -> None:
        """``stop_waiting(conversation_id)``: that session's turn leaves the shared model's
        queue (a cancel must not wait for another session's generation to end)."""
        self._settings = settings
        self._wire = wire
        self._make = make_interpreter
        self._stop_waiting = stop_waiting
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._created: list[str] = []  # by session/new: removed at exit if still empty
        self._store: ConversationStore | None = None

    def store(self) -> ConversationStore:
        with self._lock:
            if self._store is None:
                self._store = ConversationStore(self._settings.db_path)
            return self._store

    def _settings_for(self, params: dict[str, Any]) -> Settings:
        cwd = _cwd(params)
        configured = dict(self._settings.mcp_servers)
        servers = {**configured, **mcp_tables(params.get("mcpServers"), configured)}
        try:
            return settings_with(self._settings, {"workdir": cwd, "mcp_servers": servers})
        except LmcError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid params: {exc}") from exc

    def _session(self, conversation_id: str, settings: Settings) -> Session:
        approvals = Approvals.from_config(settings.approve_allow)
        session = Session(
            conversation_id,
            self._wire,
            lambda: self._make(settings, conversation_id),
            auto_run=settings.auto_run,
            approvals=approvals,
            stop_waiting=lambda: self._stop_waiting(conversation_id),
        )
        with self._lock:
            self._sessions[conversation_id] = session
        return session

    def new(self, params: dict[str, Any]) -> Session:
        settings = self._settings_for(params)
        conversation_id = self.store().create("")
        self._created.append(conversation_id)
        session = self._session(conversation_id, settings)
        if settings.mcp_servers:
            threading.Thread(target=self._start_tools, args=(session,), daemon=True).start()
        return session

    @staticmethod
    def _start_tools(session: Session) -> None:
        """Make the Interpreter now, so its MCP servers start before the first prompt."""
        try:
            interpreter = session.interpreter_now()
            if interpreter.tools is not None:
                interpreter.tools.start()
        except Exception as exc:  # told again, as an error, at the first prompt
            log.warning("the session's tools did not start: %s", exc)

    def load(self, params: dict[str, Any]) -> tuple[Session, list[Message]]:
        """A stored conversation as a session, and its messages to replay."""
        wanted = params.get("sessionId")
        if not isinstance(wanted, str) or not wanted:
            raise RpcError(INVALID_PARAMS, "invalid params: sessionId must be a string")
        settings = self._settings_for(params)
        try:
            conversation_id = self.store().resolve(wanted)
            messages = self.store().load(conversation_id)
        except LmcError as exc:
            raise RpcError(RESOURCE_NOT_FOUND, f"no session {wanted!r}: {exc}") from exc
        with self._lock:
            known = self._sessions.get(conversation_id)
        if known is not None and known.busy:
            raise RpcError(INVALID_PARAMS, f"session {wanted!r} is running a prompt")
        if known is not None:  # open here already: its kernels stay
            return known, messages
        return self._session(conversation_id, settings), messages

    def get(self, params: dict[str, Any]) -> Session:
        wanted = params.get("sessionId")
        with self._lock:
            session = self._sessions.get(wanted) if isinstance(wanted, str) else None
        if session is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no session {wanted!r} (session/new makes one)")
        return session

    def cancel(self, params: dict[str, Any]) -> None:
        wanted = params.get("sessionId")
        with self._lock:
            session = self._sessions.get(wanted) if isinstance(wanted, str) else None
        if session is not None:
            session.cancel()

    def close(self) -> None:
        """Every session ends: turns stop, kernels and MCP servers close (in parallel)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        closers = [threading.Thread(target=s.close, daemon=True) for s in sessions]
        for thread in closers:
            thread.start()
        for thread in closers:
            thread.join(timeout=30)
        store, self._store = self._store, None
        if store is not None:
            for conversation_id in self._created:
                try:
                    if not store.load_stored(conversation_id):
                        store.delete(conversation_id)
                except LmcError:
                    pass
            store.close()
