"""The gate that lets connections take turns on one in-process model."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.replay import write_replay

from lmc.backends import BackendConfig, open_backend
from lmc.errors import BackendError
from lmc.server.turns import Gate, GateTicket, TurnTakingBackend


def test_waiters_are_served_in_arrival_order_and_told_they_wait() -> None:
    gate = Gate()
    holder = GateTicket()
    assert gate.acquire(holder)
    order: list[str] = []
    told: list[str] = []
    waiting = {name: threading.Event() for name in ("a", "b")}

    def wait(name: str, ticket: GateTicket) -> None:
        def on_wait() -> None:
            told.append(name)
            waiting[name].set()

        assert gate.acquire(ticket, on_wait)
        order.append(name)
        gate.release(ticket)

    first = threading.Thread(target=wait, args=("a", GateTicket()))
    first.start()
    assert waiting["a"].wait(30)
    second = threading.Thread(target=wait, args=("b", GateTicket()))
    second.start()
    assert waiting["b"].wait(30)
    gate.release(holder)
    first.join(30)
    second.join(30)
    assert order == ["a", "b"] and told == ["a", "b"]
    assert not gate.busy


def test_an_abandoned_waiter_leaves_without_its_turn() -> None:
    gate = Gate()
    holder, waiter = GateTicket(), GateTicket()
    assert gate.acquire(holder)
    result: list[bool] = []
    queued = threading.Event()
    thread = threading.Thread(target=lambda: result.append(gate.acquire(waiter, queued.set)))
    thread.start()
    assert queued.wait(30)
    gate.abandon(waiter)
    thread.join(30)
    assert result == [False]
    gate.release(holder)
    assert not gate.busy


PROMPT = "<|start|>user<|message|>hi<|end|><|start|>assistant"


def test_a_generation_frees_the_gate_when_done_or_closed_even_before_its_first_piece(
    tiny_model: Path, tmp_path: Path
) -> None:
    answer = "<|channel|>final<|message|>hello<|return|>"
    replay = write_replay(tmp_path / "replay.txt", [answer] * 3)
    gate = Gate()
    with open_backend(BackendConfig(model=str(tiny_model), replay=str(replay))) as shared:
        backend = TurnTakingBackend(shared, gate)
        text = "".join(p.text for p in backend.generate(PROMPT))
        assert text == answer  # the whole completion, stop token included
        assert not gate.busy
        pieces = iter(backend.generate(PROMPT))
        assert gate.busy
        pieces.close()
        assert not gate.busy
        partly = iter(backend.generate(PROMPT))
        next(partly)
        partly.close()
        assert not gate.busy


def test_a_wait_for_the_model_is_bounded(tiny_model: Path, tmp_path: Path) -> None:
    gate = Gate()
    holder = GateTicket()
    assert gate.acquire(holder)
    waiter = GateTicket()
    assert not gate.acquire(waiter, timeout=0.2)
    assert waiter.timed_out and gate.busy  # the holder still holds it
    replay = write_replay(tmp_path / "replay.txt", ["<|channel|>final<|message|>hi<|return|>"])
    with open_backend(BackendConfig(model=str(tiny_model), replay=str(replay))) as shared:
        backend = TurnTakingBackend(shared, gate, wait_timeout=0.2)
        with pytest.raises(BackendError, match=r"busy with other conversations for 0\.2 s"):
            backend.generate(PROMPT)
        gate.release(holder)
        assert "".join(p.text for p in backend.generate(PROMPT)).endswith("<|return|>")
    assert not gate.busy
