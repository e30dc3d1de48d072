"""``lmc serve``'s websocket, end to end: a real client, a real uvicorn, the tiny model
replaying through llama.cpp, real kernels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from conftest import TOKEN, Served
from server_testing import (
    Client,
    code,
    errors,
    final,
    is_complete,
    is_confirmation,
    outputs,
)

from lmc.agent.storage import ConversationStore
from lmc.messages import Chunk, assemble

Serve = Callable[..., Served]
ANSWER = "The result of the division 34/24 is approximately 1.42."


def shape(chunks: list[Chunk]) -> list[tuple[Any, ...]]:
    """The chunk stream with runs of content chunks of one kind folded into one step."""
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        flag = "start" if chunk.get("start") else "end" if chunk.get("end") else "content"
        step: tuple[Any, ...] = (chunk["role"], chunk["type"], chunk.get("format"), flag)
        if chunk.get("format") == "active_line" or chunk["role"] == "server":
            step = (*step, chunk["content"])
        if flag == "content" and out and out[-1] == step:
            continue
        out.append(step)
    return out


# -- auth ----------------------------------------------------------------------------------


def test_auth_refused_until_the_token_then_accepted(serve: Serve) -> None:
    served = serve()
    client = served.client(auth=False)
    client.send({"auth": "wrong"})
    assert client.recv() == {"auth": False}
    client.say("hello")  # three frames before a good token: three refusals, nothing else
    assert [client.recv() for _ in range(3)] == [{"auth": False}] * 3
    client.send(b"\x00binary")
    assert client.recv() == {"auth": False}
    client.send("not json")
    assert client.recv() == {"auth": False}
    client.send({"auth": TOKEN})
    assert client.recv() == {"auth": True}
    client.close()


# -- the seed's turn -------------------------------------------------------------------------


def test_the_seed_turn_in_its_exact_shape_with_go(serve: Serve) -> None:
    served = serve(code("34 / 24"), final(ANSWER))
    client = served.client()
    client.say("What's 34/24?")
    before = client.until(is_confirmation)
    client.command("go")
    rest = client.turn()
    chunks = before + rest
    conversation_id = served.interpreters[0].conversation_id
    assert shape(chunks) == [
        ("assistant", "code", "python", "start"),
        ("assistant", "code", "python", "content"),
        ("assistant", "code", "python", "end"),
        ("computer", "confirmation", "execution", "content"),
        ("computer", "console", None, "start"),
        ("computer", "console", "active_line", "content", "1"),
        ("computer", "console", "output", "content"),
        ("computer", "console", "active_line", "content", None),
        ("computer", "console", None, "end"),
        ("assistant", "message", None, "start"),
        ("assistant", "message", None, "content"),
        ("assistant", "message", None, "end"),
        ("server", "conversation", None, "content", conversation_id),
        ("server", "status", None, "content", "complete"),
    ]
    confirmation = next(c for c in chunks if is_confirmation(c))
    assert confirmation == {
        "role": "computer",
        "type": "confirmation",
        "format": "execution",
        "content": {"type": "code", "format": "python", "content": "34 / 24"},
    }
    assert sum(1 for c in chunks if c["type"] == "code" and "content" in c) > 1
    assert outputs(chunks) == "1.4166666666666667\n"
    lmc_chunks = [c for c in chunks if c["role"] != "server"]
    # The same chunks as `lmc run --json` and Interpreter.chat(stream=True) give.
    assert assemble(lmc_chunks) == served.interpreters[0].messages[1:]
    with ConversationStore(served.db_path) as store:
        assert store.load(conversation_id)[-1]["content"] == ANSWER
    client.close()
