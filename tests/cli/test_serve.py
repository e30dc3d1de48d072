"""``lmc serve`` as a person starts it: a real process, its printed URL and token, a real
websocket client, Ctrl-C to stop it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.cli_replays import code, final
from support.serving import Serving, stderr_of
from websockets.sync.client import connect

WAIT = 120.0

Replay = Callable[..., Path]


@pytest.fixture
def serving(lmc_env: dict[str, str]) -> Iterator[Callable[..., Serving]]:
    started: list[Serving] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Serving:
        server = Serving({**lmc_env, **(env or {})}, *args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_serve_prints_its_url_and_token_answers_and_stops_on_ctrl_c(
    serving: Callable[..., Serving], tiny_model: Path, replay: Replay
) -> None:
    path = replay(code("34 / 24"), final("About 1.42."))
    server = serving("--port", "0", "-m", str(tiny_model), "--replay", str(path), "-y")
    url = server.printed_url()
    base, token = url.split("?token=")
    assert httpx.get(base + "heartbeat").json() == {"status": "alive"}
    assert "<title>lmc</title>" in httpx.get(url).text
    ws_url = base.replace("http://", "ws://")
    with connect(ws_url, open_timeout=WAIT) as ws:
        ws.send(json.dumps({"auth": token}))
        assert json.loads(ws.recv(timeout=WAIT)) == {"auth": True}
        ws.send(json.dumps({"role": "user", "type": "message", "content": "What's 34/24?"}))
        chunks: list[dict[str, Any]] = []
        while not chunks or chunks[-1].get("content") != "complete":
            chunks.append(json.loads(ws.recv(timeout=WAIT)))
    output = "".join(c["content"] for c in chunks if c.get("format") == "output")
    assert output == "1.4166666666666667\n"  # -y: it ran without asking
    assert server.stop() == 0


def test_serve_refuses_a_public_address_without_a_token(
    serving: Callable[..., Serving], tiny_model: Path
) -> None:
    server = serving("--host", "0.0.0.0", "--port", "0", "-m", str(tiny_model))
    assert server.process.wait(timeout=WAIT) == 2
    err = stderr_of(server.process)
    assert "refusing to listen on 0.0.0.0 without a token" in err
    assert "LMC_SERVER_TOKEN" in err


def test_serve_takes_its_token_from_the_environment(
    serving: Callable[..., Serving], tiny_model: Path, replay: Replay
) -> None:
    path = replay(final("hi"))
    server = serving(
        "--port", "0", "-m", str(tiny_model), "--replay", str(path),
        env={"LMC_SERVER_TOKEN": "chosen-token"},
    )  # fmt: skip
    url = server.printed_url()
    assert url.endswith("?token=chosen-token")
    base = url.split("?token=")[0]
    headers = {"Authorization": "Bearer chosen-token"}
    assert httpx.get(base + "conversations", headers=headers).json() == []
    assert server.stop() == 0


def test_serve_says_so_when_the_port_is_taken(
    serving: Callable[..., Serving], tiny_model: Path, replay: Replay
) -> None:
    first = serving("--port", "0", "-m", str(tiny_model), "--replay", str(replay(final("hi"))))
    port = first.printed_url().split(":")[2].split("/")[0]
    second = serving("--port", port, "-m", str(tiny_model))
    assert second.process.wait(timeout=WAIT) == 1
    err = stderr_of(second.process)
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "Traceback" not in err


def test_serve_takes_every_option_of_run_except_those_about_one_prompt() -> None:
    """Options added to `lmc run` later (say --sandbox) reach `lmc serve` by themselves, and
    each must be an option of the table (else it would be dropped)."""
    import typer.main

    from lmc.cli.app import app
    from lmc.settings import BY_KEY

    group: Any = typer.main.get_command(app)
    run, serve = group.commands["run"], group.commands["serve"]

    def names(command: Any) -> set[str]:
        return {param.name for param in command.params}

    assert names(run) - names(serve) == {"prompt", "audio", "json", "resume", "show_reasoning"}
    assert names(serve) - {"host", "port"} <= set(BY_KEY)
