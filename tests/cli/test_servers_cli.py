"""``lmc run -y "compute 6*7 with python"`` against every kind of server people run gpt-oss
on: the tool call runs in a real kernel and the model's final answer is printed.

The servers answer in the shapes the real ones send at a named version (see
``support.recorded_servers`` for the source of each, captured or assembled); the raw path
against llama.cpp's own server is tested in tests/backends/test_openai_server.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.recorded_servers import ANSWER, CODE, HOSTED_KEY, REASONING, SERVERS, serving
from typer.testing import CliRunner

from lmc.cli.app import app

PROMPT = "compute 6*7 with python"
RAN = "```python\nprint(6*7)\n```\n42\n"


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.mark.parametrize(
    ("server", "base_suffix", "extra", "dialect"),
    [
        ("ollama", "", [], "ollama"),
        ("lmstudio", "/v1", [], "chat"),
        ("vllm", "/v1", [], "completions"),
        ("vllm", "/v1", ["--api-style", "chat"], "chat"),
        ("vllm-0.10", "/v1", ["--api-style", "chat"], "chat"),
        ("ollama", "/v1", ["--api-style", "chat"], "chat"),
        ("vllm", "", ["--api-style", "responses"], "responses"),
        ("llama.cpp", "", ["--api-style", "chat"], "chat"),
    ],
)
def test_the_tool_call_runs_and_the_answer_prints(
    lmc_env: dict[str, str], server: str, base_suffix: str, extra: list[str], dialect: str
) -> None:
    routes = dict(SERVERS[server])
    if dialect == "responses":
        from support.recorded_servers import vllm_responses

        routes["/v1/responses"] = vllm_responses
    with serving(routes) as recorded:
        base = recorded.root + base_suffix
        result = _run(lmc_env, "run", "-y", "--api-base", base, *extra, PROMPT)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout == f"{RAN}{ANSWER}\n\n"
    assert result.stderr == ""
    paths = [path for path, _, _ in recorded.requests]
    endpoint = {
        "ollama": "/api/chat",
        "chat": "/v1/chat/completions",
        "responses": "/v1/responses",
        "completions": "/v1/completions",
    }[dialect]
    assert paths.count(endpoint) >= 2  # the call, then the answer after its result
    _check_the_result_went_back(server, dialect, recorded.bodies(endpoint)[-1])


def _check_the_result_went_back(server: str, dialect: str, body: dict[str, Any]) -> None:
    """The second request: the call under the server's id, its result, the reasoning."""
    if dialect == "completions":
        assert (
            "<|start|>python to=assistant<|channel|>analysis<|message|>42\n<|end|>"
            in body["prompt"]
        )
        return
    if dialect == "responses":
        items = body["input"]
        call = next(i for i in items if i.get("type") == "function_call")
        result = next(i for i in items if i.get("type") == "function_call_output")
        assert call["call_id"] == result["call_id"] == "call_966ac832ff2c814e"
        assert call["name"] == "python" and json.loads(call["arguments"]) == {"code": CODE}
        assert result["output"] == "42\n"
        reasoning = next(i for i in items if i.get("type") == "reasoning")
        assert reasoning["content"] == [{"type": "reasoning_text", "text": REASONING}]
        assert body["reasoning"] == {"effort": "medium"} and body["store"] is False
        assert {t["name"] for t in body["tools"]} >= {"python", "shell"}
        return
    messages = body["messages"]
    assert messages[0]["role"] == "system" and "run code" in messages[0]["content"]
    assistant = next(m for m in messages if m.get("tool_calls"))
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["content"] == "42\n"
    call = assistant["tool_calls"][0]
    if server == "ollama" and dialect == "ollama":
        assert call["function"] == {"name": "python", "arguments": {"code": CODE}}
        assert tool["tool_name"] == "python" and assistant["thinking"] == REASONING
        assert body["think"] == "medium"
    else:
        vllm = "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507"
        ids = {"vllm": vllm, "vllm-0.10": vllm, "lmstudio": "365174485",
               "llama.cpp": "Xyz3KdXqv2WbGJ7rT1cZp8sLm4nQe9aF",
               "ollama": "call_ouqxt6uo"}  # fmt: skip
        assert call["id"] == tool["tool_call_id"] == ids[server]
        assert json.loads(call["function"]["arguments"]) == {"code": CODE}
        # Passed back under the server's own name (vLLM 0.11.1+ reads only "reasoning").
        field = "reasoning_content" if server in ("llama.cpp", "vllm-0.10") else "reasoning"
        assert assistant[field] == REASONING
        assert len({"reasoning", "reasoning_content"} & set(assistant)) == 1
        assert body["reasoning_effort"] == "medium"
    tools = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert tools["python"]["parameters"]["required"] == ["code"] and "shell" in tools


def test_zero_sampling_flags_reach_the_server(lmc_env: dict[str, str]) -> None:
    """``--temperature 0 --top-p 0 --seed 0`` are values, not flags left out (every dialect,
    through the Interpreter: tests/agent/test_zero_values.py)."""
    zeros = ["--temperature", "0", "--top-p", "0", "--seed", "0"]
    with serving(SERVERS["ollama"]) as recorded:
        result = _run(lmc_env, "run", "-y", *zeros, "--api-base", recorded.root, PROMPT)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    bodies = recorded.bodies("/api/chat")
    assert len(bodies) >= 2
    for body in bodies:
        options = body["options"]
        assert (options["temperature"], options["top_p"], options["seed"]) == (0, 0, 0)
        assert options["seed"] is not False and type(options["seed"]) is int


def test_a_key_protected_host_gets_the_key_and_a_refused_key_is_one_line(
    lmc_env: dict[str, str],
) -> None:
    with serving(SERVERS["hosted"], key=HOSTED_KEY) as recorded:
        args = ["run", "-y", "--api-base", f"{recorded.root}/v1", "-m", "gpt-oss-120b", PROMPT]
        good = _run({**lmc_env, "OPENAI_API_KEY": HOSTED_KEY}, *args)
        bad = _run({**lmc_env, "OPENAI_API_KEY": "sk-wrong"}, *args)
        preferred = _run(
            {**lmc_env, "LMC_API_KEY": "sk-wrong", "OPENAI_API_KEY": HOSTED_KEY}, *args
        )
    assert good.exit_code == 0, (good.stdout, good.stderr)
    assert good.stdout == f"{RAN}{ANSWER}\n\n"
    assert all(
        h.get("Authorization") == f"Bearer {HOSTED_KEY}" for _, _, h in recorded.requests[:3]
    )
    for refused, variable in ((bad, "OPENAI_API_KEY"), (preferred, "LMC_API_KEY")):
        assert refused.exit_code != 0
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr
        assert "refused the API key (HTTP 401)" in lines[0] and f"${variable}" in lines[0]
        assert "sk-wrong" not in refused.stderr + refused.stdout


def test_a_forced_raw_dialect_on_a_templating_server_fails_in_one_line(
    lmc_env: dict[str, str],
) -> None:
    with serving(SERVERS["ollama"]) as recorded:
        base = f"{recorded.root}/v1"
        result = _run(
            lmc_env, "run", "-y", "--api-base", base, "--api-style", "completions", PROMPT
        )
    assert result.exit_code != 0
    assert ANSWER not in result.stdout  # the model's text is not passed off as an answer
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "without Harmony's special tokens" in lines[0] and "--api-style chat" in lines[0]


def test_doctor_names_the_dialect_for_each_server(lmc_env: dict[str, str]) -> None:
    expected = {"ollama": "ollama", "lmstudio": "chat", "vllm": "completions"}
    for server, dialect in expected.items():
        with serving(SERVERS[server]) as recorded:
            result = _run(lmc_env, "doctor", "--api-base", recorded.root)
        dialect_line = next(
            line for line in result.stdout.splitlines() if line.strip()[2:].startswith("dialect")
        )
        assert f"dialect      {dialect}:" in dialect_line, result.stdout


def test_token_counts_are_recorded_per_turn_and_listed(
    lmc_env: dict[str, str], tmp_path: Any
) -> None:
    from lmc import Interpreter

    routes = dict(SERVERS["vllm"])
    from support.recorded_servers import vllm_responses

    routes["/v1/responses"] = vllm_responses
    with serving(routes) as recorded:
        assert _run(lmc_env, "run", "-y", "--api-base", recorded.root, PROMPT).exit_code == 0
        (line,) = _run(lmc_env, "history").stdout.splitlines()
        # Two model calls of the raw dialect, each 150 prompt + 20 completion tokens.
        assert " 340 tok " in line
        with Interpreter(
            api_base=recorded.root,
            api_style="responses",
            auto_run=True,
            db_path=tmp_path / "api.db",
            sandbox="off",
        ) as interpreter:
            interpreter.chat(PROMPT, display=False)
            last, total = interpreter.token_counts()
            [info] = interpreter.store.list_conversations()
    assert last == total
    assert (last.prompt, last.completion, last.reasoning, last.calls) == (352, 72, 32, 2)
    assert info.tokens == 352 + 72
    assert "reasoning 32" in last.describe()


def test_verbose_names_the_dialect_at_start(lmc_env: dict[str, str]) -> None:
    with serving(SERVERS["lmstudio"]) as recorded:
        result = _run(lmc_env, "run", "-y", "--verbose", "--api-base", recorded.root, PROMPT)
    assert result.exit_code == 0, result.stderr
    assert "lmc: dialect: chat (LM Studio: Chat Completions)\n" in result.stderr


def test_doctor_fails_in_one_line_when_the_server_is_not_there(lmc_env: dict[str, str]) -> None:
    with serving({}) as recorded:
        root = recorded.root
    result = _run(lmc_env, "doctor", "--api-base", root)  # the port is closed now
    assert result.exit_code == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("  ✗ server")]
    assert f"cannot connect to {root}: " in line
