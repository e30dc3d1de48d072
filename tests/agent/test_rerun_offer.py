"""The offer to run a blocked block again with what the sandbox denied it, through the
Python API: real kernels in the real sandbox, a loopback HTTP server that sees from outside
whether the code reached it, a tiny model replaying the calls."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.agent_testing import MakeInterpreter
from support.fetch_server import FetchServer, fetch_code, fetch_server

from lmc.computer import Computer
from lmc.computer.sandbox import PREFIX, find_tool
from lmc.messages import Block


def _code(source: str) -> str:
    return f"<|channel|>analysis to=python code<|message|>{source}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


@pytest.fixture
def place() -> Iterator[Path]:
    """A working directory on a real disk (the sandbox's /tmp is private)."""
    root = Path(tempfile.mkdtemp(prefix="lmc-rerun-test-", dir="/var/tmp")).resolve()
    (root / "work").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def strict(place: Path) -> Iterator[Computer]:
    if not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    with Computer(sandbox="workspace", workdir=place / "work") as computer:
        yield computer


@pytest.fixture
def server() -> Iterator[FetchServer]:
    with fetch_server() as running:
        yield running


class Answers:
    """The person's answers to the offers, in order, and what each offer asked."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, str]] = []

    def __call__(self, block: Block, lacked: str) -> bool:
        self.asked.append((block["content"], lacked))
        return self.answers.pop(0)


def _said(messages: list[Any]) -> str:
    return "\n".join(str(m.get("content")) for m in messages if m["role"] == "computer")


def test_yes_runs_the_block_again_with_the_network_then_the_sandbox_is_strict_again(
    make_interpreter: MakeInterpreter, strict: Computer, server: FetchServer
) -> None:
    first, second = fetch_code(server.url("/first")), fetch_code(server.url("/second"))
    interpreter, backend = make_interpreter(
        [_code(first), _code(second), _final("Done.")], computer=strict, auto_run=True
    )
    answers = Answers(True, False)
    interpreter.offer_rerun = answers
    messages = interpreter.chat("fetch twice", display=False)

    # Checked from outside: the re-run reached the server, nothing else did.
    assert server.seen == ["/first"]
    assert answers.asked == [(first, "network"), (second, "network")]
    said = _said(messages)
    assert said.count(PREFIX) == 2, said  # the blocked first run (shown), the second block
    assert "run again with the network, once, in a fresh python kernel" in said
    assert "fetched /first" in said and "fetched /second" not in said
    # The model read the re-run (one line and its output), not the blocked first run.
    after_first = backend.prompts[1].split("to=python code", 1)[1]
    assert "run again with the network" in after_first and "fetched /first" in after_first
    assert PREFIX not in after_first
    # ...and the second block's refusal as it was: answered no, nothing ran again.
    after_second = backend.prompts[2].split("to=python code")[2]
    assert PREFIX in after_second and "run again" not in after_second
    assert strict.sandbox.network is False


def test_without_an_offer_nothing_runs_again(
    make_interpreter: MakeInterpreter, strict: Computer, server: FetchServer
) -> None:
    interpreter, _ = make_interpreter(
        [_code(fetch_code(server.url("/only"))), _final("Blocked.")],
        computer=strict,
        auto_run=True,
    )
    assert interpreter.offer_rerun is None  # the default: the API never offers by itself
    messages = interpreter.chat("fetch", display=False)
    assert server.seen == []
    assert PREFIX in _said(messages) and "run again" not in _said(messages)


def test_yes_to_a_blocked_write_runs_it_once_without_the_sandbox(
    make_interpreter: MakeInterpreter, strict: Computer, place: Path
) -> None:
    outside, later = place / "outside.txt", place / "later.txt"
    write = f"open({str(outside)!r}, 'w').write('x')"
    interpreter, _ = make_interpreter(
        [_code(write), _code(f"open({str(later)!r}, 'w').write('x')"), _final("Done.")],
        computer=strict,
        auto_run=True,
    )
    answers = Answers(True, False)
    interpreter.offer_rerun = answers
    messages = interpreter.chat("write outside", display=False)
    assert outside.read_text() == "x"  # checked from outside
    assert not later.exists()  # the next block was contained again
    assert [lacked for _, lacked in answers.asked] == ["unsandboxed", "unsandboxed"]
    assert "run again without the sandbox" in _said(messages)


def test_a_block_that_needs_the_network_and_a_write_is_offered_both_in_turn(
    make_interpreter: MakeInterpreter, strict: Computer, server: FetchServer, place: Path
) -> None:
    """Like ``pip install``: with the network it gets on to a write the sandbox refuses."""
    outside = place / "installed.txt"
    both = (
        "import urllib.request\n"
        f"body = urllib.request.urlopen({server.url('/package')!r}, timeout=10).read()\n"
        f"open({str(outside)!r}, 'wb').write(body)"
    )
    interpreter, backend = make_interpreter(
        [_code(both), _final("Installed.")], computer=strict, auto_run=True
    )
    answers = Answers(True, True)
    interpreter.offer_rerun = answers
    messages = interpreter.chat("install", display=False)
    assert [lacked for _, lacked in answers.asked] == ["network", "unsandboxed"]
    assert server.seen == ["/package", "/package"]  # once per re-run; never sandboxed
    assert outside.read_text() == "fetched /package"
    said = _said(messages)
    assert "with the network" in said and "without the sandbox" in said
    assert "run again without the sandbox" in backend.prompts[1]
