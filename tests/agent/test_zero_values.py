"""Zero is a value: temperature 0, top_p 0 and seed 0 given to the Interpreter arrive in
every request a server gets, in every dialect (a ``if settings.temperature:`` anywhere on
the way would drop them, and the server would sample at its own default).

The servers are the recorded loopback ones (``support.recorded_servers``); the turn is the
real one, the python call run in a real kernel (sandbox off: the containment is not what is
tested here). The same turn with the defaults shows the fields move with the settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.recorded_servers import ANSWER, SERVERS, serving

from lmc import Interpreter

PROMPT = "compute 6*7 with python"
ZEROS = {"temperature": 0.0, "top_p": 0.0, "seed": 0}
DEFAULTS = {"temperature": 1.0, "top_p": 1.0, "seed": None}

#: (server, api_style, endpoint, where the sampling fields are in the body).
DIALECTS = [
    ("vllm", "completions", "/v1/completions", None),
    ("vllm", "chat", "/v1/chat/completions", None),
    ("llama.cpp", "chat", "/v1/chat/completions", None),
    ("lmstudio", "chat", "/v1/chat/completions", None),
    ("vllm-responses", "responses", "/v1/responses", None),
    ("ollama", "auto", "/api/chat", "options"),
]


def _sampling(body: dict[str, Any], inside: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = body[inside] if inside else body
    return {key: fields.get(key, "absent") for key in ZEROS}


def _bodies(server: str, style: str, endpoint: str, tmp_path: Path, **options: Any) -> list[Any]:
    with (
        serving(SERVERS[server]) as recorded,
        Interpreter(
            api_base=recorded.root,
            api_style=style,
            auto_run=True,
            sandbox="off",
            db_path=tmp_path / f"{len(list(tmp_path.iterdir()))}.db",
            **options,
        ) as interpreter,
    ):
        messages = interpreter.chat(PROMPT, display=False)
    assert messages[-1]["content"] == ANSWER
    bodies = recorded.bodies(endpoint)
    assert len(bodies) >= 2, recorded.requests  # the call, then the answer after its result
    return bodies


@pytest.mark.parametrize(("server", "style", "endpoint", "inside"), DIALECTS)
def test_zero_temperature_top_p_and_seed_reach_the_server(
    server: str, style: str, endpoint: str, inside: str | None, tmp_path: Path
) -> None:
    # The Responses API has no seed: the dialect sends none, zero or not.
    expected = {**ZEROS, "seed": "absent"} if style == "responses" else ZEROS
    for body in _bodies(server, style, endpoint, tmp_path, **ZEROS):
        sent = _sampling(body, inside)
        assert sent == expected, sent
        assert all(type(sent[k]) is type(expected[k]) for k in ZEROS), sent  # 0 is not False
    default = {**DEFAULTS, "seed": "absent"}
    for body in _bodies(server, style, endpoint, tmp_path):
        assert _sampling(body, inside) == default
