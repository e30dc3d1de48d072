"""The agent side of ACP: read the client's lines, answer each request, until stdin closes.

The thread that reads never waits for a turn: each request is handled in a thread of its
own (a prompt runs for minutes; its session/cancel and the answers to lmc's permission
questions must still be read meanwhile), notifications and responses at once. Every line
gets its answer: a line that is not JSON a parse error, an unknown method "method not
found", a prompt for a session lmc does not have "resource not found"; the agent goes on
serving the valid lines. When stdin closes, every turn is stopped and every session closed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Final

from lmc.acp.prompt import PROMPT_CAPABILITIES, prompt_text
from lmc.acp.sessions import Sessions
from lmc.acp.wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Incoming,
    RpcError,
    Wire,
    parse_line,
)

__all__ = ["MAX_LINE_BYTES", "PROTOCOL_VERSION", "Agent"]

log = logging.getLogger("lmc.acp")

#: The ACP version lmc speaks; a client asking for another gets this one (it may then leave).
PROTOCOL_VERSION: Final = 1
#: A longer line is refused (and skipped) rather than read into memory whole.
MAX_LINE_BYTES: Final = 64 * 1024 * 1024

Handler = Callable[[dict[str, Any]], Any]


class Agent:
    """Serves one client over ``wire`` (out) and the lines it reads (in)."""

    def __init__(self, wire: Wire, sessions: Sessions, version: str) -> None:
        self._wire = wire
        self._sessions = sessions
        self._version = version
        self._threads: list[threading.Thread] = []
        self._handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/load": self._load,
            "session/prompt": self._prompt,
        }

    # -- the loop ----------------------------------------------------------------------------

    def serve(self, reader: BinaryIO) -> None:
        """Read and answer lines until the client closes stdin (then :meth:`close`)."""
        while True:
            line = reader.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                self._skip_rest(reader)
                self._wire.fail(None, RpcError(INVALID_REQUEST, "the message is too large"))
                continue
            if line.strip():
                self.handle_line(line)

    @staticmethod
    def _skip_rest(reader: BinaryIO) -> None:
        while True:
            rest = reader.readline(MAX_LINE_BYTES)
            if not rest or rest.endswith(b"\n"):
                return

    def handle_line(self, line: bytes) -> None:
        incoming = parse_line(line)
        if isinstance(incoming, tuple):
            ident, error = incoming
            self._wire.fail(ident, error)
            return
        if incoming.kind == "response":
            self._wire.settle(incoming)
        elif incoming.kind == "notification":
            if incoming.method == "session/cancel":
                self._sessions.cancel(incoming.params)
            else:
                log.debug("ignored the notification %s", incoming.method)
        else:
            self._request(incoming)

    def _request(self, incoming: Incoming) -> None:
        handler = self._handlers.get(incoming.method)
        if handler is None:
            error = RpcError(METHOD_NOT_FOUND, f"method not found: {incoming.method}")
            self._wire.fail(incoming.id, error)
            return
        thread = threading.Thread(
            target=self._answer, args=(incoming, handler), name=incoming.method, daemon=True
        )
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _answer(self, incoming: Incoming, handler: Handler) -> None:
        try:
            result = handler(incoming.params)
        except RpcError as exc:
            self._wire.fail(incoming.id, exc)
        except Exception as exc:
            log.exception("%s failed", incoming.method)
            error = RpcError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
            self._wire.fail(incoming.id, error)
        else:
            self._wire.respond(incoming.id, result)

    def close(self) -> None:
        """The client is gone: stop every turn, close every session, drop pending questions
        (again: nothing more)."""
        self._wire.close()
        self._sessions.close()
        for thread in self._threads:
            thread.join(timeout=10)

    # -- the methods -------------------------------------------------------------------------

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        if isinstance(asked, bool) or not isinstance(asked, int):
            raise RpcError(INVALID_PARAMS, "invalid params: protocolVersion must be a number")
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": PROMPT_CAPABILITIES,
                "mcpCapabilities": {"http": True, "sse": False},
            },
            "authMethods": [],
            "agentInfo": {"name": "lmc", "title": "lmc", "version": self._version},
        }

    def _new(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._sessions.new(params)
        return {"sessionId": session.id}

    def _load(self, params: dict[str, Any]) -> dict[str, Any]:
        session, messages = self._sessions.load(params)
        session.replay(messages)  # before the response, as the protocol asks
        return {}

    def _prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._sessions.get(params)
        text = prompt_text(params)
        return {"stopReason": session.prompt(text)}
