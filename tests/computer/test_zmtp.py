"""lmc's ZMTP client sockets (lmc/computer/zmtp.py) against real libzmq peers (pyzmq), bound
as kernels bind them: a ROUTER sees the DEALER's identity and answers it, frames of any size
(short, long, 1 MB) come through whole and in order, a SUB hears what an XPUB publishes after
subscribing, messages sent before the peer binds wait and are delivered once it does, and a
peer that comes back after going away is reached again. The last test checks that running code
loads no pyzmq into lmc's own process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from lmc.computer.zmtp import ZmtpSocket

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0


@pytest.fixture
def context() -> Iterator[Any]:
    made = zmq.Context()
    yield made
    made.destroy(linger=0)


def _address(tmp_path: Path, name: str) -> str:
    return f"ipc://{tmp_path / name}"


def _receive(socket: ZmtpSocket) -> list[bytes]:
    """The next whole message, waiting for it on the socket's descriptor."""
    import select

    ready = threading.Event()
    for _ in range(int(WAIT * 100)):
        socket.try_connect()
        message = socket.recv()
        if message is not None:
            return message
        if socket.connected:
            select.select([socket.fileno()], [], [], 0.01)
        else:
            ready.wait(0.01)
    raise AssertionError("no message came")


def _until_dropped(socket: ZmtpSocket) -> None:
    """Read until the socket sees its peer's end (libzmq closes from its I/O thread)."""
    import select

    for _ in range(int(WAIT * 100)):
        if not socket.connected:
            return
        select.select([socket.fileno()], [], [], 0.01)
        assert socket.recv() is None
    raise AssertionError("the peer's end was never seen")


def test_a_router_sees_the_dealers_identity_and_answers_it(context: Any, tmp_path: Path) -> None:
    router = context.socket(zmq.ROUTER)
    address = _address(tmp_path, "shell")
    router.bind(address)
    dealer = ZmtpSocket("DEALER", address, identity=b"lmc-session")
    try:
        assert dealer.try_connect()
        parts = [b"<IDS|MSG>", b"", b"x" * 255, b"y" * 256, os.urandom(1 << 20)]
        dealer.send_multipart(parts)
        assert router.poll(int(WAIT * 1000))
        received = router.recv_multipart()
        assert received == [b"lmc-session", *parts]
        router.send_multipart([b"lmc-session", b"reply", b"z" * 70000])
        assert _receive(dealer) == [b"reply", b"z" * 70000]
    finally:
        dealer.close()
        router.close(linger=0)


def test_a_sub_hears_what_is_published_after_it_subscribed(context: Any, tmp_path: Path) -> None:
    publisher = context.socket(zmq.XPUB)  # as ipykernel's IOPub: it hears the subscription
    address = _address(tmp_path, "iopub")
    publisher.bind(address)
    sub = ZmtpSocket("SUB", address)
    try:
        assert sub.try_connect()
        assert publisher.poll(int(WAIT * 1000))
        assert publisher.recv() == b"\x01"  # subscribed to everything
        for n in range(100):
            publisher.send_multipart([b"topic", str(n).encode()])
        assert [_receive(sub)[1] for _ in range(100)] == [str(n).encode() for n in range(100)]
    finally:
        sub.close()
        publisher.close(linger=0)


def test_what_is_sent_before_the_peer_binds_waits_for_it(context: Any, tmp_path: Path) -> None:
    address = _address(tmp_path, "late")
    dealer = ZmtpSocket("DEALER", address, identity=b"me")
    try:
        assert not dealer.try_connect()  # nothing bound there yet
        dealer.send_multipart([b"first"])
        dealer.send_multipart([b"second", b"part"])
        router = context.socket(zmq.ROUTER)
        router.bind(address)
        assert dealer.try_connect()
        assert router.poll(int(WAIT * 1000))
        assert router.recv_multipart() == [b"me", b"first"]
        assert router.recv_multipart() == [b"me", b"second", b"part"]
        router.close(linger=0)  # the peer goes away ...
        _until_dropped(dealer)  # ... and is seen to
        again = context.socket(zmq.ROUTER)
        again.bind(address)  # ... and comes back
        assert dealer.try_connect()
        dealer.send_multipart([b"third"])
        assert again.poll(int(WAIT * 1000))
        assert again.recv_multipart() == [b"me", b"third"]
        again.close(linger=0)
    finally:
        dealer.close()


RUN = """
import sys, tempfile
from lmc.computer import Computer
with Computer(sandbox="off", workdir=tempfile.mkdtemp()) as computer:
    out = [c.get("content") for c in computer.run("shell", "echo $((6 * 7))")]
assert "42\\n" in out, out
print("zmq" in sys.modules)
"""


def test_running_code_loads_no_pyzmq_into_lmc() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"]
