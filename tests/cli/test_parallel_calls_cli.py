"""``lmc run -y`` against servers that make two tool calls in one answer: both run in real
kernels, in order, and the model's answer after both results is printed.

The servers answer in each dialect's real shape (``support.recorded_parallel`` cites them).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.recorded_parallel import BOTH, CODES, IDS, OUTPUTS, PARALLEL, PARALLEL_SERVERS
from support.recorded_servers import serving
from typer.testing import CliRunner

from lmc.cli.app import app
from lmc.messages import Block

BLOCKS = "".join(
    f"```python\n{code}\n```\n{output}" for code, output in zip(CODES, OUTPUTS, strict=True)
)


@pytest.mark.parametrize(
    ("dialect", "extra"),
    [
        ("chat", ["-m", "gpt-oss-120b"]),
        ("responses", []),
        ("ollama", []),
    ],
)
def test_both_calls_of_one_answer_run_and_the_answer_prints(
    lmc_env: dict[str, str], dialect: str, extra: list[str]
) -> None:
    routes, path = PARALLEL_SERVERS[dialect]
    with serving(routes) as recorded:
        args = ["run", "-y", "--api-base", recorded.root, "--api-style", dialect, *extra]
        result = CliRunner().invoke(app, [*args, PARALLEL], env=lmc_env, catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout == f"{BLOCKS}{BOTH}\n\n"
    assert result.stderr == ""
    bodies = recorded.bodies(path)
    assert len(bodies) == 2  # the two calls, then the answer: none asked for the second call
    first_id, second_id = IDS[dialect]
    last = bodies[-1]
    if dialect == "responses":
        items = [i for i in last["input"] if i.get("type", "").startswith("function_call")]
        assert [(i["type"], i["call_id"]) for i in items] == [
            ("function_call", first_id),
            ("function_call_output", first_id),
            ("function_call", second_id),
            ("function_call_output", second_id),
        ]
        assert [json.loads(i["arguments"])["code"] for i in items[::2]] == list(CODES)
        assert [i["output"] for i in items[1::2]] == list(OUTPUTS)
        return
    messages = [m for m in last["messages"] if m.get("tool_calls") or m["role"] == "tool"]
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant", "tool"]
    for (call, result_message), call_id, code, output in zip(
        (messages[:2], messages[2:]), IDS[dialect], CODES, OUTPUTS, strict=True
    ):
        [tool_call] = call["tool_calls"]
        arguments = tool_call["function"]["arguments"]
        if dialect == "chat":
            arguments = json.loads(arguments)
        assert (tool_call["id"], arguments) == (call_id, {"code": code})
        assert (result_message["tool_call_id"], result_message["content"]) == (call_id, output)


def test_each_call_is_confirmed_on_its_own(lmc_env: dict[str, str], tmp_path: Any) -> None:
    """The person declines the first call and edits the second: the second is still asked
    about, the edit runs, and both outcomes go back as the calls' results."""
    from lmc import Interpreter

    asked: list[str] = []

    def confirm(block: Block) -> bool | str:
        asked.append(str(block["content"]))
        return False if len(asked) == 1 else "print(6*9)"

    routes, path = PARALLEL_SERVERS["ollama"]
    with (
        serving(routes) as recorded,
        Interpreter(
            api_base=recorded.root,
            api_style="ollama",
            db_path=tmp_path / "api.db",
            sandbox="off",
        ) as interpreter,
    ):
        messages = interpreter.chat(PARALLEL, display=False, confirm=confirm)
        last, _ = interpreter.token_counts()
    assert last.calls == 2  # two requests: the second call was not a model call
    assert asked == list(CODES)
    assert messages[-1]["content"] == BOTH
    bodies = recorded.bodies(path)
    assert len(bodies) == 2
    declined, edited = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert declined["content"] == "The user declined to run this code."
    assert "print(6*9)" in edited["content"] and edited["content"].endswith("54\n")
    assert [declined["tool_call_id"], edited["tool_call_id"]] == list(IDS["ollama"])
