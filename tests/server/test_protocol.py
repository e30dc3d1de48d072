"""``lmc serve``'s websocket, end to end: a real client, a real uvicorn, the tiny model
replaying through llama.cpp, real kernels."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.server_testing import (
    TOKEN,
    Client,
    Frame,
    Served,
    code,
    errors,
    final,
    is_confirmation,
    outputs,
)
from websockets.exceptions import InvalidStatus

from lmc.agent.storage import ConversationStore
from lmc.agent.tools import DECLINED
from lmc.backends.llama import LlamaCppBackend
from lmc.messages import assemble, text_of, validate_chunk
from lmc.server.connection import QUEUED
from lmc.server.turns import GateTicket

Serve = Callable[..., Served]
ANSWER = "The result of the division 34/24 is approximately 1.42."


def shape(chunks: list[Frame]) -> list[tuple[Any, ...]]:
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


def said(chunks: list[Frame]) -> str:
    return "".join(c.get("content", "") for c in chunks if c["type"] == "message")


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
        # Named as soon as it is stored, so that the page lists it at once.
        ("server", "conversation", None, "content", conversation_id),
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
    lmc_chunks = [validate_chunk(c) for c in chunks if c["role"] != "server"]
    # The same chunks as `lmc run --json` and Interpreter.chat(stream=True) give.
    assert assemble(lmc_chunks) == served.interpreters[0].messages[1:]
    with ConversationStore(served.db_path) as store:
        assert store.load(conversation_id)[-1]["content"] == ANSWER
    client.close()


def test_decline_runs_nothing_and_the_model_is_told(serve: Serve, tmp_path: Any) -> None:
    served = serve(
        code("open('ran.txt', 'w').write('ran')"),
        final("Understood, I did not run it."),
    )
    client = served.client()
    client.send({"role": "user", "type": "message", "content": "write a file"})  # one frame
    client.until(is_confirmation)
    # Wrapped in start/end, as Open Interpreter's clients send commands.
    client.send({"role": "user", "type": "command", "start": True})
    client.send({"role": "user", "type": "command", "content": "decline"})
    client.send({"role": "user", "type": "command", "end": True})
    chunks = client.turn()
    assert "declined" in outputs(chunks).lower()
    assert not (tmp_path / "ran.txt").exists()
    assert "did not run it" in said(chunks)
    # The model saw the refusal as the call's result (the prompt of its second generation).
    assert DECLINED in served.interpreters[0]._loop.prompt()
    client.close()


SLOW = "import time\nprint('started', flush=True)\ntime.sleep(600)\nprint('finished')"


def started(chunk: Frame) -> bool:
    return chunk.get("format") == "output" and "started" in chunk.get("content", "")


def test_stop_interrupts_running_code_and_the_kernel_stays_usable(serve: Serve) -> None:
    served = serve(code(SLOW), code("print('again')"), final("done"), auto_run=True, max_steps=1)
    client = served.client()
    client.say("run something slow")
    client.until(started)
    client.command("stop")
    chunks = client.turn()
    assert "finished" not in outputs(chunks)
    assert "KeyboardInterrupt" in outputs(chunks)
    assert not errors(chunks)
    # The same connection, the same kernel: the next message runs.
    client.say("again")
    assert "again" in outputs(client.turn())
    client.close()


def test_stop_at_the_confirmation_runs_nothing_and_ends_the_turn(
    serve: Serve, tmp_path: Any
) -> None:
    served = serve(code("open('ran.txt', 'w').write('ran')"))
    client = served.client()
    client.say("write a file")
    client.until(is_confirmation)
    client.command("stop")
    chunks = client.turn()
    assert not (tmp_path / "ran.txt").exists()
    assert not any(c["role"] == "assistant" for c in chunks)  # the model was not asked again
    client.close()


def test_stop_while_queued_leaves_the_queue_without_sampling(serve: Serve) -> None:
    served = serve(final("never said"))
    gate = served.config.gate
    ticket = GateTicket()
    assert gate.acquire(ticket)  # someone else is generating
    try:
        client = served.client()
        client.say("hello")
        assert client.recv() == QUEUED
        client.command("stop")
        rest = client.turn()
        assert [c["role"] for c in rest] == ["server", "server"]  # its conversation, complete
    finally:
        gate.release(ticket)
    backend = served.config.shared_backend
    assert isinstance(backend, LlamaCppBackend) and backend.replay is not None
    assert backend.replay.remaining == 1  # nothing was sampled
    client.close()


def test_a_new_message_stops_the_running_turn_first(serve: Serve) -> None:
    served = serve(code(SLOW), final("second answer"), auto_run=True)
    client = served.client()
    client.say("slow")
    client.until(started)
    client.say("never mind")
    first = client.turn()
    assert "finished" not in outputs(first)
    second = client.turn()
    assert "second answer" in "".join(
        c.get("content", "") for c in second if c["type"] == "message"
    )
    messages = served.interpreters[0].messages
    assert [m["content"] for m in messages if m["role"] == "user"] == ["slow", "never mind"]
    client.close()


def test_disconnect_mid_run_interrupts_the_code_and_keeps_the_conversation(
    serve: Serve, tmp_path: Any
) -> None:
    served = serve(code(SLOW), auto_run=True)
    client = served.client()
    client.say("slow")
    client.until(started)
    client.close()
    interpreter = served.interpreters[0]
    # The connection's clean-up ends with its kernels closed; wait for that, not for time.
    deadline = time.monotonic() + 120
    while not interpreter.computer.closed or interpreter._store is not None:
        assert time.monotonic() < deadline, "the connection was not cleaned up"
        time.sleep(0.05)
    with ConversationStore(served.db_path) as store:
        [info] = store.list_conversations()
        messages = store.load(info.id)
    assert [m["type"] for m in messages] == ["message", "code", "console"]
    output = text_of(messages[-1])
    assert "started" in output and "finished" not in output
    assert "KeyboardInterrupt" in output or "[interrupted]" in output


def test_two_clients_take_turns_on_the_model_each_with_its_own_kernel(serve: Serve) -> None:
    # A name set once per kernel: a shared kernel would print the same one twice. (Not the
    # pid: in a sandbox each kernel has its own pid namespace.)
    ident = code("import uuid; print(globals().setdefault('KERNEL', uuid.uuid4().hex))")
    served = serve(ident, ident, auto_run=True, max_steps=1)
    gate = served.config.gate
    ticket = GateTicket()
    assert gate.acquire(ticket)  # hold the model so that both clients must queue
    first, second = served.client(), served.client()
    try:
        first.say("your pid?")
        second.say("and yours?")
        assert first.recv() == QUEUED
        assert second.recv() == QUEUED
    finally:
        gate.release(ticket)
    one, two = first.turn(), second.turn()
    kernels = {outputs(one).strip(), outputs(two).strip()}
    assert len(kernels) == 2 and all(len(k) == 32 for k in kernels)
    ids = {c["content"] for c in one + two if c["type"] == "conversation"}
    assert len(ids) == 2
    first.close()
    second.close()


# -- bad frames ------------------------------------------------------------------------------


def test_bad_frames_get_an_error_chunk_and_the_connection_survives(serve: Serve) -> None:
    served = serve(final("still here"))
    client = served.client()
    bad: list[tuple[Any, str]] = [
        ("this is not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ({"role": "assistant", "type": "message", "content": "hi"}, "unknown role"),
        ({"role": "user", "type": "video", "content": "hi"}, "unknown type"),
        ({"role": "user", "type": "command", "content": "dance"}, "unknown command"),
        ({"role": "user", "type": "command", "content": "go"}, "no code is waiting"),
        ({"role": "user", "type": "message", "content": 42}, "must be a string"),
        (b"RIFF....WAVE", "binary frame"),
        ({"role": "user", "type": "audio", "format": "mp3", "start": True}, "must be wav"),
        ("x" * 50_000_001, "too large"),
        (b"\x00" * 50_000_001, "too large"),
    ]
    for frame, expected in bad:
        client.send(frame)
        chunk = client.recv()
        assert chunk["role"] == "server" and chunk["type"] == "error", (frame, chunk)
        assert expected in chunk["content"], chunk
        assert "\n" not in chunk["content"]
    # Audio that says wav but is not: refused when it ends.
    client.send({"role": "user", "type": "audio", "format": "wav", "start": True})
    client.send(b"ID3\x03 an mp3 pretending")
    client.send({"role": "user", "type": "audio", "format": "wav", "end": True})
    assert "not a wav" in client.recv()["content"]
    client.send({"role": "user", "type": "audio", "format": "wav", "content": "%%%"})
    assert "not base64" in client.recv()["content"]
    # Still the same connection, and it still works.
    client.say("are you there?")
    chunks = client.turn()
    assert "still here" in said(chunks)
    client.close()


# -- resume, HTTP, origins -------------------------------------------------------------------


def test_resume_by_conversation_id(serve: Serve) -> None:
    served = serve(final("first answer"), final("second answer"))
    client = served.client()
    client.say("first")
    [conversation_id] = [c["content"] for c in client.turn() if c["type"] == "conversation"]
    client.close()
    again = served.client(f"?conversation={conversation_id[:6]}")
    assert again.recv() == {"role": "server", "type": "conversation", "content": conversation_id}
    again.say("second")
    again.turn()
    with ConversationStore(served.db_path) as store:
        contents = [m["content"] for m in store.load(conversation_id)]
    assert contents == ["first", "first answer", "second", "second answer"]
    again.close()
    unknown = served.client("?conversation=nosuchid")
    chunk = unknown.recv()
    assert chunk["type"] == "error" and "no conversation" in chunk["content"]
    unknown.close()


def test_http_heartbeat_and_conversations_need_the_token(serve: Serve) -> None:
    served = serve(final("an answer"))
    client = served.client()
    client.say("a question")
    client.turn()
    client.close()
    base = served.live.http
    assert httpx.get(f"{base}/heartbeat").json() == {"status": "alive"}
    assert httpx.get(f"{base}/conversations").status_code == 401
    assert httpx.get(f"{base}/conversations", headers={"X-API-KEY": "wrong"}).status_code == 401
    listed = httpx.get(f"{base}/conversations", headers={"X-API-KEY": TOKEN}).json()
    assert [c["title"] for c in listed] == ["a question"]
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    one = httpx.get(f"{base}/conversations/{listed[0]['id']}", headers=bearer).json()
    assert one["messages"] == [
        {"role": "user", "type": "message", "content": "a question"},
        {"role": "assistant", "type": "message", "content": "an answer"},
    ]
    assert httpx.get(f"{base}/conversations/nope", headers=bearer).status_code == 404
    page = httpx.get(f"{base}/")
    assert page.status_code == 200 and "<title>lmc</title>" in page.text
    assert httpx.get(f"{base}/static/app.js").status_code == 200


def test_other_origins_are_refused(serve: Serve) -> None:
    served = serve()
    base = served.live.http
    evil = {"Origin": "http://evil.example", "X-API-KEY": TOKEN}
    assert httpx.get(f"{base}/conversations", headers=evil).status_code == 403
    same = {"Origin": base, "X-API-KEY": TOKEN}
    assert httpx.get(f"{base}/conversations", headers=same).status_code == 200
    with pytest.raises(InvalidStatus) as refused:
        Client(served.live.ws, origin="http://evil.example")
    assert refused.value.response.status_code == 403
    client = Client(served.live.ws, origin=base)
    client.auth(TOKEN)
    client.close()
