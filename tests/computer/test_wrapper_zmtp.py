"""The wrapper kernels' own ZeroMQ sockets (kernels/lmc_wrapper/zmtp.py) against real libzmq
peers (pyzmq, ZMTP 3.1): a ROUTER routes each reply to the peer that asked, echoes a
heartbeat REQ, an XPUB hears subscriptions and sends each subscriber what it subscribed to,
over ipc and tcp; the in-process queues block at their limit and take a connect before the
bind; a peer that speaks something else, or goes away, costs the others nothing."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
sys.path.insert(0, str(KERNELS))
from lmc_wrapper import zmtp  # noqa: E402 - kernels/ is not a package of lmc's

TIMEOUT_MS = 5000


@pytest.fixture
def context() -> Iterator[zmtp.Context]:
    made = zmtp.Context()
    yield made
    made.term()


@pytest.fixture
def libzmq() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    made: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield made
    made.destroy(linger=0)


def _client(
    libzmq: zmq.Context[zmq.Socket[bytes]], kind: int, address: str, identity: bytes = b""
) -> zmq.Socket[bytes]:
    client = libzmq.socket(kind)
    client.rcvtimeo = TIMEOUT_MS
    if identity:
        client.identity = identity
    client.connect(address)
    return client


def _received(socket_: zmtp.Socket) -> list[bytes]:
    assert socket_.poll(TIMEOUT_MS), "nothing arrived"
    return socket_.recv_multipart()


@pytest.mark.parametrize("transport", ["ipc", "tcp"])
def test_a_router_answers_each_dealer_on_its_own(
    context: zmtp.Context, libzmq: zmq.Context[zmq.Socket[bytes]], tmp_path: Path, transport: str
) -> None:
    router = context.socket(zmtp.ROUTER)
    if transport == "ipc":
        address = f"ipc://{tmp_path}/shell-1"
        router.bind(address)
    else:
        address = f"tcp://127.0.0.1:{router.bind_to_random_port('tcp://127.0.0.1')}"
    first = _client(libzmq, zmq.DEALER, address, identity=b"first")
    second = _client(libzmq, zmq.DEALER, address)  # no identity: the ROUTER makes one
    first.send_multipart([b"from", b"first"])
    second.send_multipart([b"from", b"second", b"x" * 1000])  # a long frame too
    got = [_received(router), _received(router)]
    by_sender = {parts[2]: parts for parts in got}
    assert by_sender[b"first"][0] == b"first"
    assert by_sender[b"second"][3] == b"x" * 1000
    for sender, parts in by_sender.items():
        router.send_multipart([parts[0], b"to", sender])
    assert first.recv_multipart() == [b"to", b"first"]
    assert second.recv_multipart() == [b"to", b"second"]
    router.close()
    if transport == "ipc":
        assert not Path(f"{tmp_path}/shell-1").exists()  # its socket file goes with it


def test_a_heartbeat_req_is_echoed(
    context: zmtp.Context, libzmq: zmq.Context[zmq.Socket[bytes]], tmp_path: Path
) -> None:
    router = context.socket(zmtp.ROUTER)
    router.bind(f"ipc://{tmp_path}/hb-5")
    ping = _client(libzmq, zmq.REQ, f"ipc://{tmp_path}/hb-5")
    ping.send(b"ping")
    router.send_multipart(_received(router))
    assert ping.recv() == b"ping"


def test_an_xpub_hears_subscriptions_and_sends_what_each_subscribed_to(
    context: zmtp.Context, libzmq: zmq.Context[zmq.Socket[bytes]], tmp_path: Path
) -> None:
    xpub = context.socket(zmtp.XPUB)
    xpub.bind(f"ipc://{tmp_path}/iopub-2")
    everything = _client(libzmq, zmq.SUB, f"ipc://{tmp_path}/iopub-2")
    everything.subscribe(b"")
    status_only = _client(libzmq, zmq.SUB, f"ipc://{tmp_path}/iopub-2")
    status_only.subscribe(b"kernel.status")
    heard = sorted([xpub.recv_multipart(), xpub.recv_multipart()])
    assert heard == [[b"\x01"], [b"\x01kernel.status"]]
    xpub.send_multipart([b"kernel.stream", b"out"])
    xpub.send_multipart([b"kernel.status", b"idle"])
    assert everything.recv_multipart() == [b"kernel.stream", b"out"]
    assert everything.recv_multipart() == [b"kernel.status", b"idle"]
    assert status_only.recv_multipart() == [b"kernel.status", b"idle"]
    status_only.rcvtimeo = 200
    with pytest.raises(zmq.Again):
        status_only.recv_multipart()


def test_a_dealer_that_left_is_not_written_to(
    context: zmtp.Context, libzmq: zmq.Context[zmq.Socket[bytes]], tmp_path: Path
) -> None:
    router = context.socket(zmtp.ROUTER)
    router.bind(f"ipc://{tmp_path}/shell-1")
    leaving = _client(libzmq, zmq.DEALER, f"ipc://{tmp_path}/shell-1", identity=b"leaving")
    leaving.send(b"hello")
    identity = _received(router)[0]
    leaving.close(linger=0)
    deadline = time.monotonic() + 5
    while identity in router._peers and time.monotonic() < deadline:
        time.sleep(0.01)
    router.send_multipart([identity, b"nobody hears this"])  # dropped, as by a ROUTER
    staying = _client(libzmq, zmq.DEALER, f"ipc://{tmp_path}/shell-1")
    staying.send(b"still here")
    assert _received(router)[1] == b"still here"


def test_a_peer_that_speaks_something_else_is_dropped(
    context: zmtp.Context, libzmq: zmq.Context[zmq.Socket[bytes]], tmp_path: Path
) -> None:
    router = context.socket(zmtp.ROUTER)
    path = f"{tmp_path}/shell-1"
    router.bind(f"ipc://{path}")
    with socket.socket(socket.AF_UNIX) as stranger:
        stranger.settimeout(5)
        stranger.connect(path)
        stranger.sendall(b"GET / HTTP/1.1\r\n" + b"x" * 100)
        said = b""
        while chunk := stranger.recv(4096):  # the greeting and READY, then the end
            said += chunk
        assert said.startswith(b"\xff") and b"READY" in said
    fine = _client(libzmq, zmq.DEALER, f"ipc://{path}")
    fine.send(b"ok")
    assert _received(router)[1] == b"ok"


def test_in_process_queues_block_at_their_limit(context: zmtp.Context) -> None:
    push = context.socket(zmtp.PUSH)
    push.sndhwm = 2
    push.connect("inproc://queue")  # before the bind, as libzmq allows
    push.send(b"one")
    pull = context.socket(zmtp.PULL)
    pull.rcvhwm = 2
    pull.bind("inproc://queue")
    push.send(b"two")
    with pytest.raises(zmtp.Again):
        push.send(b"three", zmtp.NOBLOCK)
    push.sndtimeo = 20
    with pytest.raises(zmtp.Again):  # still full when the send timeout ends
        push.send(b"three")
    push.sndtimeo = -1  # no timeout: the send waits for room, which a reader makes
    reader = threading.Timer(0.05, lambda: taken.append(pull.recv()))
    taken: list[bytes] = []
    reader.start()
    push.send(b"three")
    reader.join()
    assert taken == [b"one"]
    assert [pull.recv(), pull.recv()] == [b"two", b"three"]
    with pytest.raises(zmtp.Again):
        pull.recv(zmtp.NOBLOCK)


def test_a_poller_wakes_for_whichever_socket_has_a_message(context: zmtp.Context) -> None:
    quiet, busy = context.socket(zmtp.PULL), context.socket(zmtp.PULL)
    quiet.bind("inproc://quiet")
    busy.bind("inproc://busy")
    poller = zmtp.Poller()
    poller.register(quiet, zmtp.POLLIN)
    poller.register(busy, zmtp.POLLIN)
    assert poller.poll(0) == []
    push = context.socket(zmtp.PUSH)
    push.connect("inproc://busy")
    threading.Timer(0.05, push.send, args=(b"wake",)).start()
    ready = dict(poller.poll(TIMEOUT_MS))
    assert list(ready) == [busy] and busy.recv() == b"wake"
    assert poller.poll(10) == []


def _raw_subscriber(path: str, subscribe: bytes) -> socket.socket:
    """A peer speaking ZMTP 3.1 by hand: greeting, READY as SUB, then ``subscribe``."""
    peer = socket.socket(socket.AF_UNIX)
    peer.settimeout(5)
    peer.connect(path)
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 1]) + b"NULL".ljust(20, b"\x00")
    ready = b"\x05READY\x0bSocket-Type" + (3).to_bytes(4, "big") + b"SUB"
    peer.sendall(greeting + b"\x00" * 32 + bytes([0x04, len(ready)]) + ready + subscribe)
    return peer


def test_a_31_subscribe_command_and_an_unsubscription_are_heard(
    context: zmtp.Context, tmp_path: Path
) -> None:
    xpub = context.socket(zmtp.XPUB)
    path = f"{tmp_path}/iopub-2"
    xpub.bind(f"ipc://{path}")
    command = b"\x09SUBSCRIBEkernel."
    with _raw_subscriber(path, bytes([0x04, len(command)]) + command) as peer:
        assert _received(xpub) == [b"\x01kernel."]
        xpub.send_multipart([b"kernel.status", b"busy"])
        xpub.send_multipart([b"other", b"not for it"])
        said = b""
        while b"busy" not in said:
            said += peer.recv(4096)
        assert b"not for it" not in said
        peer.sendall(bytes([0x00, 8]) + b"\x00kernel.")  # unsubscribe, as a 3.0 message
        assert _received(xpub) == [b"\x00kernel."]
