"""Kernels and waits on ``lmc serve``: a kernel starts with a connection's first code (never
on connect or for a plain answer), at most ``max_kernels`` for all connections, a client
beyond it ``queued``; a confirmation nobody answers is declined after its timeout; the
conversation database is read off the event loop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.server_testing import TOKEN, Served, code, errors, final, is_confirmation, outputs

from lmc.agent.storage import ConversationStore
from lmc.server.app import ServerLimits
from lmc.server.connection import QUEUED

Serve = Callable[..., Served]


def kernels_started(interpreter: Any) -> int:
    """Kernels this connection's computer started (or is starting)."""
    computer = interpreter.computer
    return len(getattr(computer, "inner", computer)._sessions)


def test_no_kernel_starts_for_a_connection_that_runs_no_code(serve: Serve) -> None:
    served = serve(final("hello"), final("hello again"))
    clients = [served.client(), served.client()]
    for client in clients:
        client.say("hi")
        client.turn()
    assert [kernels_started(i) for i in served.interpreters] == [0, 0]
    assert served.live.app.state.kernel_slots.in_use == 0
    for client in clients:
        client.close()


def test_beyond_the_kernel_cap_a_client_is_queued_until_one_frees(serve: Serve) -> None:
    served = serve(
        code("print('first')"),
        final("done first"),
        code("print('second')"),
        final("done second"),
        auto_run=True,
        config_options={"limits": ServerLimits(max_kernels=1)},
    )
    first, second = served.client(), served.client()
    first.say("run something")
    assert "first" in outputs(first.turn())
    # One kernel, the first client's (the two interpreters are made in the order the two
    # connections were taken, which either may win).
    assert sorted(kernels_started(i) for i in served.interpreters) == [0, 1]
    second.say("run something too")
    waited = second.until(lambda c: c == QUEUED)
    assert not outputs(waited)  # nothing ran yet
    first.close()  # its kernel goes, its place frees
    rest = second.turn()
    assert "second" in outputs(rest)
    assert not errors(rest)
    second.close()


def test_stop_ends_the_wait_for_a_kernel_and_a_long_wait_gives_up(serve: Serve) -> None:
    served = serve(
        code("print('holder')"),
        code("print('never')"),
        code("print('never either')"),
        auto_run=True,
        max_steps=1,
        config_options={"limits": ServerLimits(max_kernels=1, kernel_wait=1.0)},
    )
    holder, waiter = served.client(), served.client()
    holder.say("take the kernel")
    holder.turn()
    waiter.say("run")
    waiter.until(lambda c: c == QUEUED)
    waiter.command("stop")
    stopped = waiter.turn()
    assert "Stopped while waiting for a free kernel" in outputs(stopped)
    waiter.say("run again")
    gave_up = waiter.turn()
    assert "No kernel was free within 1 s" in outputs(gave_up)
    assert "never" not in outputs(stopped + gave_up)
    holder.close()
    waiter.close()


def test_a_confirmation_nobody_answers_is_declined_after_its_timeout(
    serve: Serve, tmp_path: Path
) -> None:
    served = serve(
        code("open('ran.txt', 'w').write('ran')"),
        max_steps=1,
        config_options={"limits": ServerLimits(confirm_timeout=1.0)},
    )
    client = served.client()
    client.say("write a file")
    client.until(is_confirmation)
    # The turn runs in the server's worker threads, not in a thread of its own.
    assert not [t for t in threading.enumerate() if t.name == "lmc-serve-turn"]
    chunks = client.turn()
    assert any("no answer within 1 s" in e for e in errors(chunks))
    assert not (tmp_path / "ran.txt").exists()
    client.close()


def test_stored_conversations_are_read_off_the_event_loop(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = serve()
    readers: list[threading.Thread] = []
    original = ConversationStore.list_conversations

    def recording(self: ConversationStore) -> Any:
        readers.append(threading.current_thread())
        return original(self)

    monkeypatch.setattr(ConversationStore, "list_conversations", recording)
    response = httpx.get(f"{served.live.http}/conversations", headers={"X-API-KEY": TOKEN})
    assert response.json() == []
    assert readers and served.live._thread not in readers  # not uvicorn's loop thread


def test_a_resumed_connection_gets_the_python_variables_back(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernel state (issue 31): ``?conversation=ID`` on a new connection, whose kernel is new,
    restores what the last one saved."""
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path / "data"))
    served = serve(
        code("x = 41\ndef bump(n):\n    return n + x"),
        final("set"),
        code("print(bump(1))"),
        final("used"),
        auto_run=True,
    )
    first = served.client()
    first.say("set x")
    [conversation_id] = [c["content"] for c in first.turn() if c["type"] == "conversation"]
    first.close()
    again = served.client(f"?conversation={conversation_id}")
    again.recv()  # the conversation's id
    again.say("use x")
    text = outputs(again.turn())
    assert "[lmc: python state restored: bump, x]" in text and "42" in text
    again.close()
