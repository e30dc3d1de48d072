"""The toy MCP server (support/mcp_toy_server.py) for tests: config tables and an HTTP runner."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "START",
    "TOY",
    "cancel_when_in_flight",
    "free_port",
    "toy_http",
    "toy_stdio",
    "wait_listening",
]

TOY = Path(__file__).resolve().parent / "mcp_toy_server.py"

#: Starting Python and importing the SDK takes seconds on a loaded CI machine.
START = 120.0


def toy_stdio(*args: str, **extra: Any) -> dict[str, Any]:
    """The config table of the toy server on stdio (``args``: its mode, e.g. "broken")."""
    return {
        "command": sys.executable,
        "args": [str(TOY), *args],
        "startup_timeout": START,
        **extra,
    }


def cancel_when_in_flight(manager: Any, cancel: Callable[[], None]) -> threading.Thread:
    """Call ``cancel`` from another thread once ``manager`` has a call in flight."""

    def watch() -> None:
        deadline = time.monotonic() + START
        while manager.calls_in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        cancel()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the HTTP server did not listen in time")


@contextmanager
def serving_mcp_http(
    argv: list[str], port: int, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Run an MCP server's ``argv`` listening on ``port``; yield its streamable HTTP URL once
    it listens, and end it after."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def toy_http() -> Iterator[str]:
    """The toy server over streamable HTTP (uvicorn) on a free loopback port; yields its URL
    and ends the server after."""
    port = free_port()
    with serving_mcp_http([sys.executable, str(TOY), "http", str(port)], port) as url:
        yield url
