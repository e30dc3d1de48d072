"""The gate that lets connections take turns on one in-process model."""

from __future__ import annotations

import threading

from lmc.server.turns import Gate, GateTicket


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
