"""A 20-step task on servers that serve 4,096 tokens, each treating a longer prompt its own
way (support.served_servers: Ollama cuts it in silence, the others refuse it with HTTP 400):
lmc reads the context each serves, compacts below it, turns a refusal into a compaction and
one retry, and the person's request is never cut. ``lmc run`` ends with the model's answer
that all 20 steps ran.
"""

from __future__ import annotations

import pytest
from support.served_model import DONE, LOST, REQUEST, STEPS
from support.served_servers import CONTEXT, Stand, stand_in
from typer.testing import CliRunner

from lmc.cli.app import app


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.mark.parametrize(
    ("kind", "extra", "endpoint"),
    [
        ("ollama", [], "/api/chat"),
        ("ollama", ["--api-style", "chat"], "/v1/chat/completions"),
        ("lmstudio", [], "/v1/chat/completions"),
        ("llama.cpp", [], "/v1/chat/completions"),
        ("vllm", [], "/v1/completions"),
    ],
)
def test_a_20_step_task_survives(
    lmc_env: dict[str, str], kind: str, extra: list[str], endpoint: str
) -> None:
    with stand_in(kind) as (record, stand):
        result = _run(
            lmc_env,
            "run",
            "-y",
            "--verbose",
            "--max-steps",
            "40",
            "--api-base",
            record.root,
            *extra,
            REQUEST,
        )
    out = result.stdout
    assert result.exit_code == 0, (out[-3000:], result.stderr[-3000:])
    assert out.rstrip().endswith(DONE), out[-2000:]
    assert LOST not in out
    assert out.count("step") >= STEPS
    assert stand.lost == 0 and stand.cuts == []
    assert len(record.bodies(endpoint)) > STEPS
    assert f"lmc: context: {CONTEXT:,} tokens (" in result.stderr or kind in ("ollama", "lmstudio")
