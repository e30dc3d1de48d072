"""A real uvicorn on loopback serving lmc's app, and a real websocket client for it."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from websockets.sync.client import ClientConnection, connect

from lmc.server import ServerConfig
from lmc.server.protocols import uvicorn_config

#: A frame as the client receives it: JSON from the wire, which the tests check (the server's
#: own frames and the turn's LMC chunks alike), so not typed as lmc's chunks.
Frame = dict[str, Any]

TIMEOUT = 120.0  # generous: two shared cores, kernels starting

TOKEN = "test-token-1234"


@dataclass
class Served:
    """A running server (the ``serve`` fixture's), its config, and the Interpreters it made."""

    live: LiveServer
    config: ServerConfig
    db_path: Path
    interpreters: list[Any]

    def client(self, query: str = "", *, auth: bool = True) -> Client:
        client = Client(self.live.ws + query)
        if auth:
            client.auth(TOKEN)
        return client


class LiveServer:
    """uvicorn in a thread of the test process, on a port of its own."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        limits = app.state.config.limits.protocol()
        config = uvicorn_config(app, limits, max_frame_bytes=64 * 1024 * 1024, log_level="warning")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + TIMEOUT
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(TIMEOUT)
        self._sock.close()
        assert not self._thread.is_alive(), "uvicorn did not stop"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"


class Client:
    """One websocket client, speaking Open Interpreter's protocol frame by frame."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        opened = connect(url, max_size=None, open_timeout=TIMEOUT, **kwargs)
        self.ws: ClientConnection = opened.__enter__()
        self.seen: list[Frame] = []

    def send(self, frame: dict[str, Any] | str | bytes) -> None:
        self.ws.send(json.dumps(frame) if isinstance(frame, dict) else frame)

    def recv(self, timeout: float = TIMEOUT) -> Frame:
        frame = self.ws.recv(timeout=timeout)
        chunk: Frame = json.loads(frame)
        self.seen.append(chunk)
        return chunk

    def auth(self, token: str) -> None:
        self.send({"auth": token})
        assert self.recv() == {"auth": True}

    def say(self, text: str) -> None:
        """A user message as start, content, end (as Open Interpreter's clients send it)."""
        self.send({"role": "user", "type": "message", "start": True})
        self.send({"role": "user", "type": "message", "content": text})
        self.send({"role": "user", "type": "message", "end": True})

    def command(self, name: str) -> None:
        self.send({"role": "user", "type": "command", "content": name})

    def until(self, stop: Callable[[Frame], bool]) -> list[Frame]:
        """Chunks up to and including the first for which ``stop`` is true."""
        chunks = []
        while True:
            chunk = self.recv()
            chunks.append(chunk)
            if stop(chunk):
                return chunks

    def turn(self) -> list[Frame]:
        """Chunks up to and including the ``complete`` status."""
        return self.until(is_complete)

    def close(self) -> None:
        self.ws.close()


def is_complete(chunk: Frame) -> bool:
    return chunk == {"role": "server", "type": "status", "content": "complete"}


def is_confirmation(chunk: Frame) -> bool:
    return chunk.get("type") == "confirmation"


def outputs(chunks: list[Frame]) -> str:
    return "".join(c["content"] for c in chunks if c.get("format") == "output" and "content" in c)


def errors(chunks: list[Frame]) -> list[str]:
    return [c["content"] for c in chunks if (c.get("role"), c.get("type")) == ("server", "error")]


def code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"
