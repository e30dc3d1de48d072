"""A small HTTP/1.1 client on the standard library's sockets, for a plain ``http://`` server.

httpx (with httpcore, h11, http.client and the email package it pulls in) costs 60-90 ms of
imports, a third of an answer-only ``lmc run`` before its first request. What lmc asks of a
local server is little: JSON requests, answers read whole or streamed line by line,
keep-alive, a connect and a read timeout. This client does that much, with httpx's
behaviour where lmc sees it (its JSON encoding, ``iter_lines``, ``raise_for_status``, gzip
and deflate answers), and :func:`lmc.backends._http.make_client` picks it only for an
``http://`` server with no proxy set in the environment: ``https://`` and proxies go
through httpx.

Its errors (:class:`WireError`) are mapped with httpx's in
:func:`lmc.backends._http.server_errors`.
"""

from __future__ import annotations

import io
import json as jsonlib
import select
import socket
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import quote, urlsplit

__all__ = ["Client", "ConnectFailed", "Dropped", "Response", "StatusError", "TimedOut", "WireError"]

_MAX_LINE: Final = 65_536
_MAX_HEADERS: Final = 100
_READ_SIZE: Final = 65_536
_USER_AGENT: Final = "lmc"
#: What a path may hold unquoted (httpx leaves these as they are).
_PATH_SAFE: Final = "/%:@!$&'()*+,;=~-._"


class WireError(Exception):
    """Any failure of a request: the connection, a timeout, a malformed or cut answer."""


class ConnectFailed(WireError):
    """No connection to the server (refused, unreachable, a name that does not resolve)."""


class TimedOut(WireError):
    """The server did not connect or answer within the timeout."""


class Dropped(WireError):
    """The server closed the connection, or sent what is not HTTP, before the answer ended."""


class StatusError(WireError):
    """:meth:`Response.raise_for_status` on an answer that is not a success."""

    def __init__(self, message: str, response: Response) -> None:
        super().__init__(message)
        self.response = response


class _LineSplitter:
    """Lines out of text that comes in pieces, as ``str.splitlines`` cuts them (httpx's
    ``iter_lines`` does the same): a ``\\r`` at a piece's end waits for a ``\\n``."""

    NEWLINES: Final = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

    def __init__(self) -> None:
        self.pending = ""
        self.trailing_cr = False

    def feed(self, text: str) -> list[str]:
        if self.trailing_cr:
            text, self.trailing_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self.trailing_cr = text[:-1], True
        if not text:
            return []
        text, self.pending = self.pending + text, ""
        lines = text.splitlines()
        if text[-1] not in self.NEWLINES:
            self.pending = lines.pop()
        return lines

    def flush(self) -> list[str]:
        rest = [self.pending] if self.pending or self.trailing_cr else []
        self.pending, self.trailing_cr = "", False
        return rest


@contextmanager
def _reading(what: str) -> Iterator[None]:
    """Socket errors while talking to the server, as this module's errors."""
    try:
        yield
    except TimeoutError as exc:
        raise TimedOut(f"timed out {what}") from exc
    except OSError as exc:
        raise Dropped(f"{what}: {exc.strerror or exc}") from exc


#: The buffered reader of a connection's socket.
_Reader = io.BufferedReader  # its type parameter is the raw stream's (typeshed)

#: Linux's switch that acknowledges at once what came in (None elsewhere).
_QUICKACK: Final = getattr(socket, "TCP_QUICKACK", None)


class _SocketReader(io.RawIOBase):
    """The socket's bytes for a buffered reader, each read acknowledging the last at once.

    A server that writes an answer in two sends (headers, then body: Python's http.server,
    cpp-httplib without TCP_NODELAY) holds the second back under Nagle's algorithm until the
    first is acknowledged, and on a kept-alive connection Linux delays that acknowledgement
    (40 ms) hoping to carry it on the client's next request: 40 ms a request, for nothing.
    ``TCP_QUICKACK`` before each read sends a pending acknowledgement now."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if _QUICKACK is not None:
            try:
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                pass
        return self._sock.recv_into(buffer)


class _Connection:
    """One keep-alive connection to the server."""

    def __init__(self, address: tuple[str, int], connect_timeout: float) -> None:
        self.address = address
        host, port = address
        try:  # an ASCII name as bytes: a str would import the idna codec (3 ms) to encode it
            name: str | bytes = host.encode("ascii") if host.isascii() else host
            self.sock = socket.create_connection((name, port), timeout=connect_timeout)  # type: ignore[arg-type]
        except TimeoutError as exc:
            raise TimedOut("timed out connecting") from exc
        except OSError as exc:
            raise ConnectFailed(f"[Errno {exc.errno}] {exc.strerror or exc}") from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file: _Reader = io.BufferedReader(_SocketReader(self.sock))
        self.used = False

    def stale(self) -> bool:
        """An idle connection the server closed (or wrote to unasked) cannot be reused."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def interrupt(self) -> None:
        """End a read under way in another thread: it sees the connection closed."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.interrupt()
        for end in (self.file.close, self.sock.close):
            try:
                end()
            except OSError:
                pass


class Response:
    """An answer: status and headers read, the body read whole or as it comes."""

    def __init__(
        self, version: str, status: int, reason: str, headers: dict[str, str], body: Iterator[bytes]
    ) -> None:
        self.http_version = version
        self.status_code = status
        self.reason_phrase = reason
        self.headers = headers
        self._body = body
        self._content: bytes | None = None

    def iter_bytes(self) -> Iterator[bytes]:
        if self._content is not None:
            yield self._content
            return
        yield from self._body

    def read(self) -> bytes:
        if self._content is None:
            self._content = b"".join(self._body)
        return self._content

    @property
    def content(self) -> bytes:
        return self.read()

    @property
    def encoding(self) -> str:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value.strip("\"' "):
                return value.strip("\"' ")
        return "utf-8"

    @property
    def text(self) -> str:
        try:
            return self.read().decode(self.encoding, errors="replace")
        except LookupError:
            return self.read().decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.read())

    def iter_lines(self) -> Iterator[str]:
        import codecs

        try:
            decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
        except LookupError:
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        splitter = _LineSplitter()
        for data in self.iter_bytes():
            yield from splitter.feed(decoder.decode(data))
        yield from splitter.feed(decoder.decode(b"", final=True))
        yield from splitter.flush()

    def raise_for_status(self) -> Response:
        if 200 <= self.status_code < 300:
            return self
        kind = "Client error" if self.status_code < 500 else "Server error"
        raise StatusError(f"{kind} '{self.status_code} {self.reason_phrase}'", self)


def _target(url: str) -> tuple[tuple[str, int], str, str]:
    """(address to connect to, Host header, request target) of an http:// URL."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise WireError(f"not an http:// URL: {url}")
    port = parts.port or 80
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    path = quote(parts.path or "/", safe=_PATH_SAFE)
    query = f"?{quote(parts.query, safe=_PATH_SAFE + '?')}" if parts.query else ""
    return (host, port), shown if port == 80 else f"{shown}:{port}", path + query


def _read_head(file: _Reader) -> tuple[str, int, str, dict[str, str]]:
    """(HTTP version, status, reason, headers) of the next answer; 1xx answers skipped."""
    while True:
        line = file.readline(_MAX_LINE)
        if not line:
            raise Dropped("Server disconnected without sending a response.")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit() or len(code) != 3:
            raise Dropped(f"malformed status line {line[:80]!r}")
        headers: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            raw = file.readline(_MAX_LINE)
            if raw in (b"\r\n", b"\n"):
                break
            if not raw.endswith(b"\n"):
                raise Dropped("the connection closed in the answer's headers")
            name, colon, value = raw.decode("latin-1").partition(":")
            if not colon:
                raise Dropped(f"malformed header line {raw[:80]!r}")
            key, value = name.strip().lower(), value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        else:
            raise Dropped("too many header lines")
        if not 100 <= int(code) < 200 or int(code) == 101:
            return version, int(code), reason.strip(), headers


def _chunked(file: _Reader) -> Iterator[bytes]:
    while True:
        line = file.readline(_MAX_LINE)
        if not line.endswith(b"\n"):
            raise Dropped("peer closed connection without sending complete message body")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise Dropped(f"malformed chunk size {line[:40]!r}") from None
        if size == 0:
            while file.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        yield from _exactly(file, size)
        if file.readline(_MAX_LINE) not in (b"\r\n", b"\n"):
            raise Dropped("malformed chunk end")


def _exactly(file: _Reader, size: int) -> Iterator[bytes]:
    while size > 0:
        data = file.read1(min(size, _READ_SIZE))
        if not data:
            raise Dropped("peer closed connection without sending complete message body")
        size -= len(data)
        yield data


def _until_closed(file: _Reader) -> Iterator[bytes]:
    while data := file.read1(_READ_SIZE):
        yield data


def _decoded(body: Iterator[bytes], coding: str) -> Iterator[bytes]:
    """The body without its gzip or deflate content coding."""
    if coding not in ("gzip", "deflate"):
        yield from body
        return
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)
    first = True
    for data in body:
        try:
            out = inflate.decompress(data)
        except zlib.error:
            if not (first and coding == "deflate"):
                raise Dropped("the answer's compressed body is malformed") from None
            inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send
            out = inflate.decompress(data)
        first = False
        if out:
            yield out
    if rest := inflate.flush():
        yield rest


class Client:
    """Requests to http:// servers over kept-alive connections (one per request at a time,
    so threads may share the client). ``timeout``: for each read; ``connect``: to connect."""

    def __init__(
        self, headers: dict[str, str] | None = None, timeout: float = 600.0, connect: float = 10.0
    ) -> None:
        self.headers = {
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
            "Connection": "keep-alive",
            "User-Agent": _USER_AGENT,
            **(headers or {}),
        }
        self.timeout = timeout
        self.connect = connect
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, url: str) -> Response:
        return self.request("GET", url)

    def post(self, url: str, json: Any = None) -> Response:
        return self.request("POST", url, json=json)

    def request(
        self, method: str, url: str, *, json: Any = None, timeout: float | None = None
    ) -> Response:
        """The answer, read whole."""
        with self.stream(method, url, json=json, timeout=timeout) as response:
            response.read()
        return response

    @contextmanager
    def stream(
        self, method: str, url: str, *, json: Any = None, timeout: float | None = None
    ) -> Iterator[Response]:
        """The answer with its body still to read; the connection is kept for the next request
        only when the body was read to its end."""
        address, host, target = _target(url)
        body = b""
        head = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
        head += [f"{name}: {value}" for name, value in self.headers.items()]
        if json is not None:
            body = jsonlib.dumps(
                json, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            head += [f"Content-Length: {len(body)}", "Content-Type: application/json"]
        elif method in ("POST", "PUT", "PATCH"):
            head.append("Content-Length: 0")
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        connection, response = self._send(address, request, method, timeout)
        finished = False

        def body_then_release(raw: Iterator[bytes], reusable: bool) -> Iterator[bytes]:
            nonlocal finished
            with _reading("reading the answer"):
                yield from raw
            finished = reusable

        try:
            response._body = body_then_release(response._body, _keeps_alive(response))
            yield response
        finally:
            self._release(connection, keep=finished)

    def _send(
        self, address: tuple[str, int], request: bytes, method: str, timeout: float | None
    ) -> tuple[_Connection, Response]:
        """Send on an idle connection, else a new one; a kept one the server had closed
        meanwhile (it answered nothing) is replaced, and the request sent again on that."""
        while True:
            connection = self._take(address, timeout)
            try:
                connection.sock.settimeout(self.timeout if timeout is None else timeout)
                with _reading("sending the request"):
                    connection.sock.sendall(request)
                with _reading("waiting for the answer"):
                    version, status, reason, headers = _read_head(connection.file)
                body = _body(connection.file, method, status, headers)
            except Dropped:
                self._release(connection, keep=False)
                if connection.used and not self._closed:
                    continue
                raise
            except BaseException:
                self._release(connection, keep=False)
                raise
            connection.used = True
            return connection, Response(version, status, reason, headers, body)

    def _take(self, address: tuple[str, int], timeout: float | None) -> _Connection:
        with self._lock:
            if self._closed:
                raise WireError("the client is closed")
            idle = self._idle.get(address, [])
            while idle:
                connection = idle.pop()
                if not connection.stale():
                    self._busy.add(connection)
                    return connection
                connection.close()
        connection = _Connection(address, self.connect if timeout is None else timeout)
        with self._lock:
            self._busy.add(connection)
        return connection

    def _release(self, connection: _Connection, *, keep: bool) -> None:
        with self._lock:
            self._busy.discard(connection)
            if keep and not self._closed:
                self._idle.setdefault(connection.address, []).append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close every connection; a request reading from one fails (as the server closed it)."""
        with self._lock:
            self._closed = True
            busy, idle = list(self._busy), [c for kept in self._idle.values() for c in kept]
            self._idle.clear()
        for connection in busy:
            connection.interrupt()  # its request closes it when it ends
        for connection in idle:
            connection.close()


def _keeps_alive(response: Response) -> bool:
    connection = response.headers.get("connection", "").lower()
    if response.http_version == "HTTP/1.0":
        return "keep-alive" in connection and "content-length" in response.headers
    return "close" not in connection


def _body(file: _Reader, method: str, status: int, headers: dict[str, str]) -> Iterator[bytes]:
    """The body's bytes as they come, by the answer's framing, content coding removed."""
    if method == "HEAD" or status in (204, 304):
        raw: Iterator[bytes] = iter(())
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        raw = _chunked(file)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"].split(",")[0])
        except ValueError:
            raise Dropped(f"malformed Content-Length {headers['content-length']!r}") from None
        raw = _exactly(file, length)
    else:
        headers["connection"] = "close"  # the body ends with the connection
        raw = _until_closed(file)
    return _decoded(raw, headers.get("content-encoding", "").strip().lower())
