"""The offer to run a sandbox-blocked block again, in a real 80x24 terminal: tmux runs
``lmc`` (tiny model + replay, the default sandbox without the network) and the code fetches
from a loopback HTTP server, which tells from outside whether the code reached it. Yes runs
that block again with the network; no runs nothing; the next block is blocked again; with
``-y`` or ``--json`` no offer is made."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli_replays import code as _code
from support.cli_replays import final as _final
from support.fetch_server import FetchServer, fetch_code, fetch_server
from support.replay import write_replay
from support.tmux_testing import ROOT, Pane
from support.tmux_testing import start_chat as _start_chat

from lmc.computer.sandbox import find_tool

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

OFFER = r"Run this block again with network\? \[y/N\]"


@pytest.fixture
def server() -> Iterator[FetchServer]:
    if not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    with fetch_server() as running:
        yield running


def _chat(tiny_model: Path, tmp_path: Path, server: FetchServer, *flags: str) -> Pane:
    completions = [
        _code(fetch_code(server.url("/first"))),
        _code(fetch_code(server.url("/second"))),
        _final("Both fetches are done."),
    ]
    pane, _ = _start_chat(tiny_model, tmp_path, completions, *flags)
    pane.tmux("resize-window", "-t", "chat", "-x", "80", "-y", "24")
    return pane


def test_yes_runs_the_block_again_with_the_network_and_no_runs_nothing(
    tiny_model: Path, tmp_path: Path, server: FetchServer
) -> None:
    pane = _chat(tiny_model, tmp_path, server)
    try:
        pane.wait_for(r"^>\s*$", timeout=60)
        pane.type_line("fetch both")
        pane.wait_for(r"Run this code\?", timeout=120)
        mark = pane.mark()
        pane.type_line("y")
        pane.wait_for(OFFER, after=mark, timeout=60)
        assert "[blocked by the sandbox]" in pane.screen()[mark:]
        assert server.seen == []
        mark = pane.mark()
        pane.type_line("y")
        pane.wait_for("fetched /first", after=mark, timeout=60)
        assert "run again with the network" in pane.screen()[mark:]
        assert server.seen == ["/first"]  # the re-run reached the server

        # The next block runs in the strict sandbox again; answered no, nothing runs again.
        pane.wait_for(r"Run this code\?", after=mark, timeout=60)
        mark = pane.mark()
        pane.type_line("y")
        pane.wait_for(OFFER, after=mark, timeout=60)
        mark = pane.mark()
        pane.type_line("n")
        pane.wait_for("Both fetches are done.", after=mark, timeout=60)
        assert server.seen == ["/first"]
    finally:
        pane.tmux("kill-server")


@pytest.mark.parametrize("flags", [("-y",), ("-y", "--json")])
def test_with_yes_or_json_nothing_is_offered_and_nothing_runs_again(
    flags: tuple[str, ...], tiny_model: Path, tmp_path: Path, server: FetchServer
) -> None:
    pane = _chat(tiny_model, tmp_path, server, *flags)
    try:
        if "--json" not in flags:
            pane.wait_for(r"^>\s*$", timeout=60)
        pane.type_line("fetch both")
        done = "Both fetches are done."
        if "--json" in flags:  # streamed a few characters a chunk: wait for the answer's end
            done = r'"role": "assistant", "type": "message", "end": true'
        pane.wait_for(done, timeout=120)
        screen = pane.screen()
        assert screen.count("[blocked by the sandbox]") == 2, screen
        assert "Run this block again" not in screen and server.seen == []
    finally:
        pane.tmux("kill-server")


def test_lmc_run_at_a_terminal_offers_it_too(
    tiny_model: Path, tmp_path: Path, server: FetchServer
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    replay = write_replay(
        tmp_path / "run.txt", [_code(fetch_code(server.url("/once"))), _final("Fetched it.")]
    )
    env = {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color",
    }
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m lmc run --model",
            shlex.quote(str(tiny_model)),
            "--replay",
            shlex.quote(str(replay)),
            "'fetch it'; echo LMC-EXITED rc=$?; sleep 60",
        ]
    )
    pane = Pane(f"lmc-test-{os.getpid()}-{tmp_path.name}", "run")
    pane.tmux("new-session", "-d", "-s", "run", "-x", "80", "-y", "24", "-c", str(work), command)
    try:
        pane.wait_for(r"Run this code\?", timeout=120)
        pane.type_line("y")
        pane.wait_for(OFFER, timeout=60)
        assert server.seen == []
        pane.type_line("y")
        pane.wait_for("LMC-EXITED rc=0", timeout=60)
        assert "fetched /once" in pane.screen() and server.seen == ["/once"]
    finally:
        pane.tmux("kill-server")
