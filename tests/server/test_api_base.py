"""``lmc serve --api-base``: each connection has its own backend on a real
``python -m llama_cpp.server`` (the tiny model), so nobody queues."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from server_testing import Served

from lmc.backends.openai_server import OpenAIServerBackend


@pytest.fixture(scope="module")
def llama_server(tiny_model: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(tiny_model),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192",
        "--n_threads", "1", "--n_threads_batch", "1", "--verbose", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {process.stderr.read()[-2000:]!r}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"{base}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "llama_cpp.server did not start"
            time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_two_clients_on_a_server_backend_each_have_their_own_and_never_queue(
    serve: Callable[..., Served], llama_server: str
) -> None:
    served = serve(api_base=llama_server, max_tokens=8, max_steps=1)
    assert served.config.shared_backend is None
    first, second = served.client(), served.client()
    first.say("hello")
    second.say("hello too")
    one, two = first.turn(), second.turn()
    for chunks in (one, two):
        assert not any(c.get("content") == "queued" for c in chunks)
        assert not any(c["type"] == "error" for c in chunks), chunks
        # The model on the server wrote something (an answer, or noise that lmc notes).
        assert any(c["role"] in ("assistant", "computer") for c in chunks)
    backends = [interpreter.backend for interpreter in served.interpreters]
    assert len(backends) == 2 and backends[0] is not backends[1]
    assert all(isinstance(b, OpenAIServerBackend) for b in backends)
    first.close()
    second.close()
