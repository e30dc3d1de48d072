"""``lmc serve --api-base``: each connection has its own backend on a real
``python -m llama_cpp.server`` (the tiny model), so nobody queues."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.llama_server import llama_server as running_llama_server
from support.server_testing import Served


@pytest.fixture(scope="module")
def llama_server(tiny_model: Path) -> Iterator[str]:
    with running_llama_server(tiny_model, context=8192) as base:
        yield base


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
    # A server backend each (not the in-process model); which dialect auto detection chose
    # does not matter here.
    assert all(b.dialect != "in-process" for b in backends)
    first.close()
    second.close()
