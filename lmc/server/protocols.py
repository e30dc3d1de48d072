"""uvicorn's HTTP and websocket protocols with the limits a shared machine needs.

uvicorn leaves three doors open that an ASGI app cannot close from inside:

- a connection that never finishes its request headers is kept forever (slowloris): here
  the headers must be complete within ``header_timeout`` seconds of the connection (or of
  the first byte of the next request on a kept-alive one), else it is closed;
- connections are accepted without bound: past ``max_connections`` (or past
  ``max_per_address`` from one client address, so that one host cannot take every place) a
  new connection is answered ``503`` and closed as soon as its request head has arrived, or
  at the header timeout (answering before the head is read makes the client's send race the
  close, and some clients then see a reset instead of the 503);
- the websocket frame limit is one for the whole connection: here frames are held to
  ``pre_auth_max_bytes`` until the app raises the limit after authentication (through the
  ``lmc.frame_limit`` scope extension), so an unauthenticated client cannot make the server
  buffer a 60 MB frame.

:func:`uvicorn_config` builds a ``uvicorn.Config`` with both protocols for one app.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["FRAME_LIMIT_EXTENSION", "ProtocolLimits", "uvicorn_config"]

log = logging.getLogger("lmc.server")

#: The scope extension through which the app sets the connection's frame limit.
FRAME_LIMIT_EXTENSION = "lmc.frame_limit"


def _busy(why: bytes) -> bytes:
    body = why + b": try again shortly\r\n"
    return (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )


_BUSY = _busy(b"too many connections")
_BUSY_HERE = _busy(b"too many connections from this address")


#: The most of a refused connection's request head that is read before answering anyway.
_MAX_HEAD = 16 * 1024


class ProtocolLimits:
    """The limits the protocols enforce (see the module docstring)."""

    def __init__(
        self,
        *,
        header_timeout: float,
        max_connections: int,
        pre_auth_max_bytes: int,
        max_per_address: int | None = None,
    ) -> None:
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.max_per_address = max_per_address or max_connections
        self.pre_auth_max_bytes = pre_auth_max_bytes
        self._refused = 0
        self._told_at: float | None = None

    def refusal(self, connections: set[Any], mine: Any) -> bytes | None:
        """The 503 for a new connection (``mine``, already among ``connections``) past a
        limit, else None; refusals are logged at most every 10 s (a flood of connections
        must not become a flood of log lines)."""
        address = _address(mine)
        if len(connections) > self.max_connections:
            answer = _BUSY
        elif sum(_address(c) == address for c in connections) > self.max_per_address:
            answer = _BUSY_HERE
        else:
            return None
        self._refused += 1
        now = time.monotonic()
        if self._told_at is None or now - self._told_at >= 10.0:
            log.warning(
                "refused %d connection(s): %d are open (limit %d, %d from one address)",
                self._refused,
                len(connections) - 1,
                self.max_connections,
                self.max_per_address,
            )
            self._refused = 0
            self._told_at = now
        return answer


class _GuardedH11(H11Protocol):
    limits: ProtocolLimits  # set on the per-config subclass

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._header_timer: asyncio.TimerHandle | None = None
        #: The request head read so far of a connection that will be refused (None: served).
        self._refusing: bytearray | None = None
        super().connection_made(transport)
        self._answer = self.limits.refusal(self.connections, self)
        if self._answer is not None:
            self._refusing = bytearray()
        self._arm()

    def _refuse(self, data: bytes) -> None:
        """Read the refused connection's request head (never passed on), then answer 503."""
        assert self._refusing is not None
        self._refusing += data
        if b"\r\n\r\n" in self._refusing or len(self._refusing) > _MAX_HEAD:
            self._disarm()
            self.transport.write(self._answer or _BUSY)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refusing is not None:
            self._refuse(data)
            return
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded to a websocket
            self._disarm()
        elif self.conn.their_state is h11.IDLE:
            self._arm()  # still reading a request's headers
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(
                self.limits.header_timeout, self._headers_late
            )

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.get_protocol() is self and not self.transport.is_closing():
            if self._refusing is not None:  # a refused one hears why, even if it said nothing
                self.transport.write(self._answer or _BUSY)
            self.transport.close()


class _GuardedWebSocket(WebSocketsSansIOProtocol):
    limits: ProtocolLimits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn.max_message_size = self.limits.pre_auth_max_bytes

    def _raise_frame_limit(self) -> None:
        self.conn.max_message_size = self.config.ws_max_size

    async def run_asgi(self) -> None:
        extensions = self.scope["extensions"]
        if extensions is not None:
            extensions[FRAME_LIMIT_EXTENSION] = {"raise": self._raise_frame_limit}
        await super().run_asgi()


def _address(protocol: Any) -> str | None:
    """The client's host of a uvicorn protocol (HTTP or websocket; None: unknown)."""
    client = getattr(protocol, "client", None)
    return str(client[0]) if client else None


def _with_limits(base: type[Any], limits: ProtocolLimits) -> type[Any]:
    return type(base.__name__, (base,), {"limits": limits})


def uvicorn_config(
    app: Any, limits: ProtocolLimits, *, max_frame_bytes: int, **options: Any
) -> uvicorn.Config:
    """A ``uvicorn.Config`` serving ``app`` through the guarded protocols."""
    http: Callable[..., asyncio.Protocol] = _with_limits(_GuardedH11, limits)
    ws: Callable[..., asyncio.Protocol] = _with_limits(_GuardedWebSocket, limits)
    return uvicorn.Config(
        app,
        http=http,  # type: ignore[arg-type]
        ws=ws,  # type: ignore[arg-type]
        ws_max_size=max_frame_bytes,
        **options,
    )
