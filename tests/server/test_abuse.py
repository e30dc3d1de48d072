"""``lmc serve`` under abuse, on a real uvicorn on 127.0.0.1: DNS rebinding, frames made to
break the reader, clients that never finish or never authenticate, too many connections,
guessed tokens. Every attack here is bounded in count and time and targets only loopback."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest
from support.server_testing import TIMEOUT, TOKEN, Client, Served, final
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from lmc.server import ServerConfig
from lmc.server.app import ServerLimits
from lmc.server.security import AuthThrottle

Serve = Callable[..., Served]
FAST = ServerLimits(header_timeout=1.0, auth_timeout=1.0, max_connections=8)


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails the test when the server logged a traceback (uvicorn's or lmc's)."""
    caplog.set_level(logging.WARNING)
    yield
    failures = [r for r in caplog.records if r.exc_info or "Exception in ASGI" in r.getMessage()]
    assert not failures, [r.getMessage() for r in failures]


def raw_connection(served: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", served.live.port), timeout=TIMEOUT)


def closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes (True) or the socket's timeout passes (False)."""
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def drained(sock: socket.socket) -> bytes | None:
    """What the server sent before it closed the connection; None when it did not close."""
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        return None
    return received


# -- DNS rebinding ---------------------------------------------------------------------------


def test_a_rebound_host_name_is_refused_on_http_and_websocket(serve: Serve) -> None:
    served = serve(config_options={"extra_hosts": ("lmc.example",)})
    base = served.live.http
    key = {"X-API-KEY": TOKEN}
    # A page on evil.example whose name now resolves to 127.0.0.1: same origin to the
    # browser, so Origin and Host agree; only the Host header tells.
    evil = {**key, "Host": f"evil.example:{served.live.port}"}
    assert httpx.get(f"{base}/conversations", headers=evil).status_code == 403
    assert httpx.get(f"{base}/", headers=evil).status_code == 403
    with pytest.raises(InvalidStatus) as refused:
        connect(
            f"ws://evil.example:{served.live.port}/",
            sock=raw_connection(served),
            open_timeout=TIMEOUT,
            origin=Origin(f"http://evil.example:{served.live.port}"),
        )
    assert refused.value.response.status_code == 403
    # Loopback names, addresses and the configured names are served.
    for host in ("localhost", "127.0.0.1", "[::1]", "lmc.example"):
        headers = {**key, "Host": f"{host}:{served.live.port}"}
        assert httpx.get(f"{base}/conversations", headers=headers).status_code == 200, host
    with connect(
        f"ws://localhost:{served.live.port}/", sock=raw_connection(served), open_timeout=TIMEOUT
    ) as allowed:
        allowed.send(json.dumps({"auth": TOKEN}))
        assert allowed.recv(timeout=TIMEOUT) == '{"auth": true}'


# -- frames made to break the reader ---------------------------------------------------------

DEEP = "[" * 4_000 + "]" * 4_000  # within the frame limit before auth
LONG_NUMBER = '{"auth": ' + "7" * 5_000 + "}"
SURROGATE = '{"auth": "\\ud800"}'


def test_hostile_frames_before_auth_are_refused_and_the_connection_lives(
    serve: Serve, no_tracebacks: None
) -> None:
    served = serve()
    client = served.client(auth=False)
    for frame in (DEEP, LONG_NUMBER, SURROGATE, '{"auth": ["x"]}', "{", b"\xff\x00"):
        client.send(frame)
        assert client.recv() == {"auth": False}, frame
    client.auth(TOKEN)
    client.close()


HOSTILE_AFTER_AUTH: list[tuple[str, str]] = [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"role": "user", "type": "message", "content": ' + "9" * 5_000 + "}", "digits"),
    ('{"role": "user", "type": "message", "content": "\\ud800"}', "lone surrogate"),
    ('{"role": "user", "type": "message", "start": true, "content": "a\\udfffb"}', "surrogate"),
    ('{"role": {"nested": [1, 2]}, "type": "message"}', "unknown role"),
    ('{"role": "user", "type": ["message"]}', "unknown type"),
    ('{"role": "user", "type": "command", "content": {"go": true}}', "unknown command"),
    ('{"role": "user", "type": "audio", "format": {"x": 1}, "start": true}', "must be wav"),
    ('{"role": "\\ud800", "type": "message"}', "unknown role"),
    ('{"role": "user"}', "needs a type"),
    ("1e999999", "JSON object"),
]


def test_hostile_frames_after_auth_are_error_chunks_and_the_connection_lives(
    serve: Serve, no_tracebacks: None
) -> None:
    served = serve(final("still here"))
    client = served.client()
    for frame, expected in HOSTILE_AFTER_AUTH:
        client.send(frame)
        chunk = client.recv()
        assert (chunk["role"], chunk["type"]) == ("server", "error"), (frame[:60], chunk)
        assert expected in chunk["content"], chunk
        assert len(chunk["content"]) < 200 and "\n" not in chunk["content"]
    client.say("are you there?")
    chunks = client.turn()
    assert "still here" in "".join(c.get("content", "") for c in chunks if c["type"] == "message")
    client.close()


def test_frames_before_auth_are_held_small_and_after_it_large(serve: Serve) -> None:
    served = serve()
    big = '{"auth": "' + "x" * 100_000 + '"}'
    client = served.client(auth=False)
    client.send(big)
    with pytest.raises(ConnectionClosed) as closed:
        client.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    # Authenticated, a client may send large frames (the same one is an error chunk now).
    client = served.client()
    client.send(big.replace('"auth"', '"role"'))
    assert "unknown role" in client.recv()["content"]
    client.close()


# -- clients that never finish ---------------------------------------------------------------


def test_unfinished_request_headers_are_closed(serve: Serve) -> None:
    served = serve(config_options={"limits": FAST})
    silent = raw_connection(served)  # says nothing at all
    partial = raw_connection(served)
    partial.sendall(b"GET /heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    dribbling = raw_connection(served)
    dribbling.settimeout(0.2)
    closed_while_dribbling = False
    for byte in b"GET /heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200:
        try:
            dribbling.sendall(bytes([byte]))
            if dribbling.recv(1) == b"":
                closed_while_dribbling = True
                break
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            closed_while_dribbling = True
            break
    assert closed_while_dribbling  # a byte every 0.2 s does not keep it open
    for sock in (silent, partial):
        assert closed_by_server(sock)
        sock.close()
    dribbling.close()
    # A whole request is still answered.
    assert httpx.get(f"{served.live.http}/heartbeat").json() == {"status": "alive"}


def test_a_flood_of_silent_connections_is_refused_or_closed(serve: Serve) -> None:
    """40 connections that never send a byte (the audit's 20,200, scaled down): past the
    limit each is answered 503 (at the header timeout, as they send no request); the rest are
    closed at the header timeout."""
    served = serve(config_options={"limits": FAST})
    flood = [raw_connection(served) for _ in range(40)]
    answers = [drained(sock) for sock in flood]
    for sock in flood:
        sock.close()
    refused = [a for a in answers if a is not None and a.startswith(b"HTTP/1.1 503")]
    closed = [a for a in answers if a == b""]
    assert len(refused) >= 40 - FAST.max_connections
    assert len(refused) + len(closed) == 40  # none left open
    assert httpx.get(f"{served.live.http}/heartbeat").json() == {"status": "alive"}


def test_a_websocket_that_never_authenticates_is_closed(serve: Serve) -> None:
    served = serve(config_options={"limits": FAST})
    client = served.client(auth=False)
    with pytest.raises(ConnectionClosed) as closed:
        client.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


def test_connections_beyond_the_limit_get_503_until_one_closes(serve: Serve) -> None:
    limits = ServerLimits(max_connections=8, auth_timeout=TIMEOUT)
    served = serve(config_options={"limits": limits})
    held = [Client(served.live.ws) for _ in range(8)]
    with pytest.raises(InvalidStatus) as refused:
        Client(served.live.ws)
    assert refused.value.response.status_code == 503
    assert httpx.get(f"{served.live.http}/heartbeat").status_code == 503
    held.pop().close()
    freed = threading.Event()
    for _ in range(400):  # the server notices the close within a few loop turns
        if httpx.get(f"{served.live.http}/heartbeat").status_code == 200:
            break
        freed.wait(0.05)
    else:
        pytest.fail("a closed connection did not free its place")
    for client in held:
        client.close()


def _heartbeat_from(served: Served, source: str) -> bytes:
    """GET /heartbeat from the loopback address ``source`` (any 127.x works on Linux)."""
    with socket.create_connection(
        ("127.0.0.1", served.live.port), timeout=TIMEOUT, source_address=(source, 0)
    ) as sock:
        sock.sendall(b"GET /heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return drained(sock) or b""


@pytest.mark.parametrize("per_address", [4, None])
def test_one_address_cannot_take_every_place(serve: Serve, per_address: int | None) -> None:
    """Four websockets from 127.0.0.1 fill its share: a fifth from there is refused, while
    127.0.0.2 is still served. Without the per-address limit (None: only the total counts)
    the fifth is served too."""
    limits = ServerLimits(max_connections=64, auth_timeout=TIMEOUT)
    if per_address is not None:
        limits.max_per_address = per_address
    else:
        limits.max_per_address = limits.max_connections
    served = serve(config_options={"limits": limits})
    held = [Client(served.live.ws) for _ in range(4)]
    try:
        here = _heartbeat_from(served, "127.0.0.1")
        elsewhere = _heartbeat_from(served, "127.0.0.2")
        assert elsewhere.startswith(b"HTTP/1.1 200")
        if per_address is not None:
            assert here.startswith(b"HTTP/1.1 503")
            assert b"too many connections from this address" in here
        else:
            assert here.startswith(b"HTTP/1.1 200")
    finally:
        for client in held:
            client.close()


def test_lmc_serve_lets_one_address_hold_16_connections(serve: Serve) -> None:
    """The default per-address share (what ``lmc serve`` runs with: ServerConfig's default
    limits): with 15 websockets open from 127.0.0.1 a 16th connection is served, with 16
    open a 17th gets 503, while 127.0.0.2 is still served."""
    served = serve()
    assert served.config.limits == ServerLimits()
    held = [Client(served.live.ws) for _ in range(15)]
    try:
        assert _heartbeat_from(served, "127.0.0.1").startswith(b"HTTP/1.1 200")
        held.append(Client(served.live.ws))
        refused = _heartbeat_from(served, "127.0.0.1")
        assert refused.startswith(b"HTTP/1.1 503"), refused
        assert b"too many connections from this address" in refused
        assert _heartbeat_from(served, "127.0.0.2").startswith(b"HTTP/1.1 200")
    finally:
        for client in held:
            client.close()


# -- guessed tokens --------------------------------------------------------------------------


class HeldDelays:
    """``auth_delay`` for tests: records each delay and holds it until released."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.release = threading.Event()

    async def __call__(self, seconds: float) -> None:
        import anyio

        self.asked.append(seconds)
        await anyio.to_thread.run_sync(self.release.wait, TIMEOUT)


def test_wrong_tokens_are_answered_later_and_a_right_one_never_waits(serve: Serve) -> None:
    held = HeldDelays()
    served = serve(config_options={"auth_delay": held})
    guesser = served.client(auth=False)
    for guess in ("a", "b", "c"):  # the first few mistakes are free
        guesser.send({"auth": guess})
        assert guesser.recv() == {"auth": False}
    guesser.send({"auth": "d"})
    with pytest.raises(TimeoutError):
        guesser.recv(timeout=1.0)  # held back by the throttle
    # Meanwhile another client (same address) with the token gets in at once, and the
    # handshake itself is never refused.
    served.client().close()
    held.release.set()
    assert guesser.recv() == {"auth": False}
    assert held.asked == [0.25]
    guesser.auth(TOKEN)
    guesser.close()


def test_the_throttle_grows_to_a_ceiling_of_a_few_seconds() -> None:
    throttle = AuthThrottle()
    delays = [throttle.failed("203.0.113.9") for _ in range(20)]
    assert delays[:3] == [0.0, 0.0, 0.0]
    assert delays[3:7] == [0.25, 0.5, 1.0, 2.0]
    assert max(delays) == 3.0 == delays[-1]
    assert throttle.failed("198.51.100.1") == 0.0  # per client


def test_the_config_default_limits_are_those_promised() -> None:
    config = ServerConfig(token="t", make_interpreter=lambda *a: None)
    assert config.limits.max_connections >= 64
    assert config.limits.header_timeout == 20.0 and config.limits.auth_timeout == 20.0
    assert config.throttle.ceiling <= 5.0


# -- the page's headers ----------------------------------------------------------------------


def test_the_page_and_its_files_forbid_framing_and_foreign_scripts(serve: Serve) -> None:
    served = serve()
    for path in ("/", "/static/app.js", "/heartbeat"):
        response = httpx.get(f"{served.live.http}{path}")
        assert response.status_code == 200
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"  # the token is in the URL
