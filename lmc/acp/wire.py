"""JSON-RPC 2.0 as ACP speaks it: one JSON object per line, both ways, on a pair of pipes.

:func:`parse_line` turns one line into what came (a request, a notification, a response to
one of ours) or into the error response it deserves: the official SDKs drop a line that is
not JSON without a word, lmc answers it (``-32700``), as JSON-RPC says. :class:`Wire` writes
whole lines under a lock (turns stream from their own threads) and matches the client's
responses to lmc's own requests (``session/request_permission``).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "Incoming",
    "Pending",
    "RpcError",
    "Wire",
    "parse_line",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: ACP's "Resource not found": a session id lmc does not know.
RESOURCE_NOT_FOUND: Final = -32002

JsonId = int | str | None


class RpcError(Exception):
    """An error answer: its JSON-RPC code and one line for the person."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = " ".join(message.split()) or "error"


@dataclass(frozen=True, slots=True)
class Incoming:
    """One message from the client: a request (``id`` and ``method``), a notification
    (``method``, no ``id``) or a response (``id``, with ``result`` or ``error``)."""

    kind: str  # "request" | "notification" | "response"
    id: JsonId = None
    method: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    error: dict[str, Any] | None = None


def _valid_id(value: object) -> bool:
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


def parse_line(line: bytes) -> Incoming | tuple[JsonId, RpcError]:
    """What the line says, or ``(id, error)`` to answer it with (id None when unknown)."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, RpcError(PARSE_ERROR, f"parse error: not JSON ({exc})")
    if not isinstance(message, dict):
        return None, RpcError(INVALID_REQUEST, "invalid request: a message is a JSON object")
    ident = message.get("id")
    if message.get("jsonrpc") != "2.0" or not _valid_id(ident):
        return (ident if _valid_id(ident) else None), RpcError(
            INVALID_REQUEST, 'invalid request: not JSON-RPC 2.0 ("jsonrpc": "2.0", a valid id)'
        )
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            error = message.get("error")
            return Incoming(
                "response",
                ident,
                result=message.get("result"),
                error=error if isinstance(error, dict) else None,
            )
        return ident, RpcError(INVALID_REQUEST, "invalid request: no method")
    params = message.get("params", {})
    if not isinstance(method, str) or not isinstance(params, dict | None):
        return ident, RpcError(INVALID_REQUEST, "invalid request: method and params malformed")
    kind = "request" if "id" in message else "notification"
    return Incoming(kind, ident, method, params or {})


class Pending:
    """A request lmc sent, until its response comes (or the connection ends)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self.result: Any = None
        self.error: dict[str, Any] | None = None

    def settle(self, result: Any, error: dict[str, Any] | None) -> None:
        if not self._done.is_set():
            self.result, self.error = result, error
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


class Wire:
    """The protocol's output (a file descriptor lmc keeps for itself) and its own requests."""

    def __init__(self, out_fd: int) -> None:
        self._fd = out_fd
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._closed = False

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line; nothing once the client is gone."""
        data = (json.dumps(message, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._closed:
                return
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError:  # the client closed its end: nobody reads any more
                self._closed = True

    def respond(self, ident: JsonId, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def fail(self, ident: JsonId, error: RpcError) -> None:
        self.send(
            {"jsonrpc": "2.0", "id": ident, "error": {"code": error.code, "message": error.message}}
        )

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Pending:
        """Send a request; the :class:`Pending` settles when the client answers."""
        ident = next(self._ids)
        pending = Pending()
        with self._lock:
            self._pending[ident] = pending
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        return pending

    def settle(self, incoming: Incoming) -> None:
        """A response from the client: to the request it answers (unknown ids are dropped)."""
        if not isinstance(incoming.id, int):
            return
        with self._lock:
            pending = self._pending.pop(incoming.id, None)
        if pending is not None:
            pending.settle(incoming.result, incoming.error)

    def close(self) -> None:
        """The client is gone: every request still waiting settles with an error."""
        with self._lock:
            self._closed = True
            waiting, self._pending = list(self._pending.values()), {}
        for pending in waiting:
            pending.settle(None, {"code": INTERNAL_ERROR, "message": "the client is gone"})
