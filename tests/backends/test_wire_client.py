"""lmc's own HTTP client (lmc.backends._wire) against a real loopback HTTP server.

The server is Python's http.server, written to answer as servers do on the wire: chunked
streams (llama.cpp's server, vLLM and Ollama stream chunked), a Content-Length answer, an
HTTP/1.0 answer ending with the connection, a gzip body, a connection closed after an answer
without a word (a server's idle keep-alive timeout), a stream cut before its last chunk.
Each failure comes out of :func:`lmc.backends._http.server_errors` as the same lmc error,
with the same line, as httpx's does (the same requests through httpx, side by side).
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.loopback import serving_in_thread

from lmc.backends import _http
from lmc.backends._http import HttpClient, make_client, server_errors
from lmc.backends._wire import Client, _LineSplitter
from lmc.backends.base import BackendConfig
from lmc.errors import ServerError, StreamDroppedError


class _State:
    def __init__(self) -> None:
        self.ports: list[int] = []  # the client's port of each request: one per connection
        self.first_line_seen = threading.Event()
        self.release = threading.Event()
        self.bodies: list[Any] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State

    def log_message(self, *args: Any) -> None:
        pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _answer(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.state.ports.append(self.client_address[1])
        route = getattr(self, "route_" + self.path.strip("/").replace("-", "_"), None)
        if route is None:
            self._answer(404, b'{"error": {"message": "no such route"}}')
        else:
            route()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.state.bodies.append((self.headers.get("Content-Type"), self.rfile.read(length)))
        self.do_GET()

    def route_json(self) -> None:
        self._answer(200, b'{"n": 1}', Content_Type="application/json")

    def route_stream(self) -> None:
        """Two events; the second only once the client has shown it has the first."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(b'data: {"a": 1}\r\n\r\n')
        self.state.first_line_seen.wait(30)
        self._chunk(b'data: {"b": "\xc3')  # a character cut between two chunks
        self._chunk(b'\xa9"}\r\n\r\ndata: [DONE]\r\n\r\n')
        self.wfile.write(b"0\r\n\r\n")

    def route_old(self) -> None:
        """HTTP/1.0 without a length: the body ends when the connection does."""
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[1, 2]")
        self.close_connection = True

    def route_gzip(self) -> None:
        body = gzip.compress(b'{"zipped": true}')
        self._answer(200, body, Content_Type="application/json", Content_Encoding="gzip")

    def route_once(self) -> None:
        """An answer, then the connection closed without a Connection: close."""
        self._answer(200, b'{"once": true}', Content_Type="application/json")
        self.close_connection = True

    def route_cut(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(b'data: {"a": 1}\n\n')
        self.close_connection = True

    def route_hang(self) -> None:
        self.state.release.wait(30)

    def route_secret(self) -> None:
        self._answer(401, b'{"error": {"message": "bad key"}}')

    def route_busy(self) -> None:
        self._answer(503, b'{"error": {"message": "the model is loading"}}')


@pytest.fixture
def server() -> Iterator[tuple[str, _State]]:
    state = _State()
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    try:
        with serving_in_thread(httpd):
            yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        state.first_line_seen.set()
        state.release.set()


@pytest.fixture(params=["wire", "httpx"])
def client_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each failure through both clients: lmc's own and httpx (as for https:// or a proxy)."""
    kind: str = request.param
    if kind == "httpx":
        monkeypatch.setattr(_http, "_own_client_suffices", lambda _base: False)
    return kind


def _client(root: str, timeout: float = 30.0) -> HttpClient:
    return make_client(BackendConfig(api_base=f"{root}/v1", timeout=timeout), "sk-test")


def test_a_stream_is_read_as_it_comes(server: tuple[str, _State]) -> None:
    root, state = server
    with Client() as client, client.stream("POST", f"{root}/stream", json={"q": "é"}) as answer:
        lines = []
        for line in answer.iter_lines():
            lines.append(line)
            state.first_line_seen.set()  # the server sends the rest only now
    assert lines == ['data: {"a": 1}', "", 'data: {"b": "é"}', "", "data: [DONE]", ""]
    assert state.bodies == [("application/json", '{"q":"é"}'.encode())]  # as httpx encodes


def test_answers_by_length_by_close_and_gzipped(server: tuple[str, _State]) -> None:
    root, _state = server
    with Client() as client:
        assert client.get(f"{root}/json").json() == {"n": 1}
        assert client.get(f"{root}/old").json() == [1, 2]
        assert client.get(f"{root}/gzip").json() == {"zipped": True}
        missing = client.get(f"{root}/nowhere")
    assert missing.status_code == 404
    assert missing.reason_phrase == "Not Found"
    assert json.loads(missing.text) == {"error": {"message": "no such route"}}


def test_a_connection_is_kept_and_one_the_server_closed_is_replaced(
    server: tuple[str, _State],
) -> None:
    root, state = server
    with Client() as client:
        for _ in range(3):
            client.get(f"{root}/json")
        assert len(set(state.ports)) == 1  # one connection, kept alive
        assert client.get(f"{root}/once").json() == {"once": True}
        assert client.get(f"{root}/json").json() == {"n": 1}  # on a new connection
    assert len(set(state.ports)) == 2


def test_threads_share_a_client(server: tuple[str, _State]) -> None:
    root, _state = server
    answers: list[Any] = []
    with Client() as client:
        threads = [
            threading.Thread(target=lambda: answers.append(client.get(f"{root}/json").json()))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert answers == [{"n": 1}] * 4


def test_lines_are_cut_as_httpx_cuts_them() -> None:
    """httpx's iter_lines is str.splitlines over the whole text; so are these, in pieces."""
    text = "a\r\nb\rc\nd\r\r\ne\u2028f\n\ng"
    for size in (1, 2, 3, 5):
        splitter = _LineSplitter()
        lines = []
        for start in range(0, len(text), size):
            lines += splitter.feed(text[start : start + size])
        assert [*lines, *splitter.flush()] == text.splitlines()


def _failure(client: HttpClient, method: str, url: str, timeout: float = 30.0) -> ServerError:
    with (
        pytest.raises(ServerError) as caught,
        server_errors(url, timeout, "LMC_API_KEY"),
        client.stream(method, url, json={} if method == "POST" else None) as answer,
    ):
        if answer.status_code >= 400:
            answer.read()
            answer.raise_for_status()
        for _line in answer.iter_lines():
            pass
    return caught.value


def test_failures_are_the_same_lines_as_through_httpx(
    server: tuple[str, _State], client_kind: str
) -> None:
    root, _state = server
    client = _client(root)
    try:
        refused = _failure(client, "POST", f"{root}/secret")
        assert (
            str(refused)
            == f"{root}/secret refused the API key (HTTP 401): check the key from $LMC_API_KEY"
        )
        busy = _failure(client, "GET", f"{root}/busy")
        assert str(busy) == f"{root}/busy answered HTTP 503: the model is loading"
        cut = _failure(client, "GET", f"{root}/cut")
        assert isinstance(cut, StreamDroppedError)
        assert str(cut).startswith(f"{root}/cut closed the connection before the answer ended: ")
    finally:
        client.close()


def test_no_server_and_no_answer(server: tuple[str, _State], client_kind: str) -> None:
    root, state = server
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{unused.getsockname()[1]}"
    client = _client(nowhere)
    try:
        refused = _failure(client, "GET", f"{nowhere}/json")
    finally:
        client.close()
    assert str(refused) == f"cannot connect to {nowhere}/json: [Errno 111] Connection refused"
    assert refused.hint is not None and "Is the server running" in refused.hint
    client = _client(root, timeout=0.5)  # the server never answers: no race with the clock
    try:
        silent = _failure(client, "GET", f"{root}/hang", timeout=0.5)
    finally:
        client.close()
        state.release.set()
    assert str(silent) == f"{root}/hang did not answer within 0.5 s"


def test_closing_the_client_ends_a_stream_read_in_another_thread(
    server: tuple[str, _State],
) -> None:
    """Backend.close() from another thread while an answer streams: the read fails at once
    (as if the server had closed), it does not wait for the server."""
    root, state = server
    client = Client()
    reading = threading.Event()
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            with client.stream("GET", f"{root}/stream") as answer:
                for _line in answer.iter_lines():
                    reading.set()  # the server holds the rest back until the test ends
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert reading.wait(30)
    client.close()
    reader.join(30)
    state.first_line_seen.set()
    assert not reader.is_alive()
    assert len(outcome) == 1 and outcome[0] is not None
    assert _http._failure(outcome[0]) == "dropped"
