"""Dialect detection, models, keys and token counts against the recorded servers.

The servers answer as the real ones do (``support.recorded_servers`` cites each shape); the
whole turn, tool call and all, is exercised through the CLI in tests/cli/test_servers_cli.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.recorded_servers import ANSWER, REASONING, SERVERS, Reply, serving

from lmc.backends import BackendConfig, Piece, SamplingSettings, StopReason, open_backend
from lmc.backends._dialogue import HarmonyWriter, read_prompt
from lmc.backends.detect import detect, split_base
from lmc.errors import ConfigError, ServerError
from lmc.harmony import tokens

#: What lmc sends after the system and developer messages: the person's message, then the
#: assistant's turn to write.
PROMPT = "<|start|>user<|message|>compute 6*7 with python<|end|><|start|>assistant"
#: The same turn after the python call ran (its result is in the prompt).
AFTER_CALL = (
    "<|start|>user<|message|>compute 6*7 with python<|end|>"
    "<|start|>assistant<|channel|>analysis<|message|>Need python.<|end|>"
    "<|start|>assistant to=python<|channel|>analysis code<|message|>print(6*7)<|call|>"
    "<|start|>python to=assistant<|channel|>analysis<|message|>42\n<|end|>"
    "<|start|>assistant"
)


@pytest.mark.parametrize(
    ("server", "dialect", "model"),
    [
        ("ollama", "ollama", "gpt-oss:20b"),
        ("lmstudio", "chat", "openai/gpt-oss-20b"),
        ("vllm", "completions", "openai/gpt-oss-20b"),
        ("llama.cpp", "chat", "gpt-oss-20b"),  # serves no /v1/completions here: chat
    ],
)
def test_detection_finds_the_dialect_and_the_model(server: str, dialect: str, model: str) -> None:
    with serving(SERVERS[server]) as recorded:
        for base in (recorded.root, f"{recorded.root}/v1", f"{recorded.root}/v1/"):
            found = detect(BackendConfig(api_base=base))
            assert (found.dialect, found.config.model) == (dialect, model), found.reason


def test_a_server_with_several_models_names_them_all() -> None:
    with (
        serving(SERVERS["hosted"]) as recorded,
        pytest.raises(ConfigError, match=r"serves 2 models; choose one with --model") as error,
    ):
        detect(BackendConfig(api_base=recorded.root))
    assert "gpt-oss-120b, gpt-oss-20b" in str(error.value)


def test_a_server_without_a_model_list_gets_no_model_field() -> None:
    routes = {k: v for k, v in SERVERS["vllm"].items() if k != "/v1/models"}
    with serving(routes) as recorded, open_backend(BackendConfig(api_base=recorded.root)) as b:
        list(b.generate(PROMPT))
    assert all("model" not in body for body in recorded.bodies("/v1/completions"))


def test_shortcuts_name_the_server_and_the_bare_model() -> None:
    from lmc.backends.detect import _shortcut

    config, dialect = _shortcut(BackendConfig(model="ollama:gpt-oss:20b"))
    assert (config.api_base, config.model, dialect) == (
        "http://127.0.0.1:11434",
        "gpt-oss:20b",
        "ollama",
    )
    config, dialect = _shortcut(
        BackendConfig(model="lmstudio:openai/gpt-oss-20b", api_base="http://h:1/v1")
    )
    assert (config.api_base, config.model, dialect) == (
        "http://h:1/v1",
        "openai/gpt-oss-20b",
        "chat",
    )
    with serving(SERVERS["ollama"]) as recorded:
        found = detect(BackendConfig(model="ollama:gpt-oss:20b", api_base=recorded.root))
    assert (found.dialect, found.config.model) == ("ollama", "gpt-oss:20b")
    assert split_base("http://h:11434/v1/") == ("http://h:11434", "http://h:11434/v1")


def test_a_bad_api_style_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="api_style 'rest' is not one of auto, completions"):
        detect(BackendConfig(api_base="http://127.0.0.1:9", api_style="rest"))


def _run(
    server: str, prompt: str, style: str = "auto", routes: dict[str, Any] | None = None
) -> tuple[Any, list[Piece]]:
    with serving(routes or SERVERS[server]) as recorded:
        config = BackendConfig(api_base=recorded.root, api_style=style)
        with open_backend(config) as backend:
            generation = backend.generate(prompt, SamplingSettings(max_tokens=None))
            return generation, list(generation)


def _text(pieces: list[Piece]) -> str:
    return "".join(p.text for p in pieces)


@pytest.mark.parametrize(
    ("server", "style", "prompt_tokens", "completion_tokens", "reasoning_tokens"),
    [
        ("vllm", "auto", 150, 20, 0),  # the usage-only chunk after the finish
        ("vllm", "chat", 120, 24, 0),
        ("vllm", "responses", 176, 36, 16),
        ("ollama", "auto", 169, 15, 0),
        ("llama.cpp", "chat", 10, 28, 0),  # the usage-only chunk after the finish
        ("ollama", "chat", 169, 15, 0),  # Ollama's /v1: the same
        ("vllm-0.10", "chat", 120, 24, 0),
    ],
)
def test_token_counts_come_from_each_dialect(
    server: str, style: str, prompt_tokens: int, completion_tokens: int, reasoning_tokens: int
) -> None:
    routes = dict(SERVERS[server])
    if style == "responses":
        from support.recorded_servers import vllm_responses

        routes["/v1/responses"] = vllm_responses
    generation, pieces = _run(server, AFTER_CALL, style, routes)
    assert generation.stop_reason is StopReason.RETURN
    assert pieces[-1] == Piece(tokens.RETURN, special=True)
    assert ANSWER in _text(pieces)
    assert generation.prompt_tokens == prompt_tokens
    assert generation.completion_tokens == completion_tokens
    assert generation.reasoning_tokens == reasoning_tokens


def test_a_call_is_written_as_gpt_oss_writes_it() -> None:
    generation, pieces = _run("vllm", PROMPT, "chat")
    assert generation.stop_reason is StopReason.CALL
    assert _text(pieces) == (
        f"<|channel|>analysis<|message|>{REASONING}<|end|>"
        "<|start|>assistant<|channel|>analysis to=python code<|message|>print(6*7)<|call|>"
    )
    assert [p.text for p in pieces if p.special][-1] == tokens.CALL


def _raw_stream(*texts: str, finish: str = "stop") -> Reply:
    events = [{"choices": [{"index": 0, "text": t, "finish_reason": None}]} for t in texts]
    events.append({"choices": [{"index": 0, "text": "", "finish_reason": finish}]})
    body = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
    return 200, "text/event-stream", body


def test_a_header_run_into_its_text_is_still_the_final_answer() -> None:
    """An engine that dropped <|message|>: ``<|channel|>finalHello!`` is the answer Hello!"""
    from lmc.harmony.parser import StreamParser

    routes = {"/v1/completions": lambda _body: _raw_stream("<|channel|>", "finalHello!")}
    generation, pieces = _run("vllm", PROMPT, "completions", routes)
    assert generation.stop_reason is StopReason.RETURN
    parser = StreamParser()
    for piece in pieces:
        parser.feed(piece.text, special=piece.special)
    parser.finish()
    assert [(m.channel, m.text) for m in parser.messages] == [("final", "Hello!")]


def test_an_error_in_the_stream_is_one_line() -> None:
    def failing(_body: Any) -> Reply:
        line = b'{"error":"model requires more system memory (14.0 GiB) than is available"}\n'
        return 200, "application/x-ndjson", [line]

    routes = {**SERVERS["ollama"], "/api/chat": failing}
    with pytest.raises(ServerError, match=r"reported an error: model requires more system memory"):
        _run("ollama", PROMPT, routes=routes)


def test_reading_the_prompt_back_keeps_ids_and_reasoning() -> None:
    prompt = read_prompt(
        "<|start|>system<|message|>Reasoning: high\n\n# Valid channels: analysis.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions<|end|>"
        + AFTER_CALL,
        {("python", json.dumps({"code": "print(6*7)"})): "call_server_1"},
    )
    assert (prompt.effort, prompt.instructions) == ("high", "Be brief.")
    kinds = [(t.kind, t.call_id) for t in prompt.turns]
    assert kinds == [
        ("user", ""),
        ("reasoning", ""),
        ("call", "call_server_1"),
        ("result", "call_server_1"),
    ]


def test_the_writer_closes_reasoning_without_an_answer_as_no_answer() -> None:
    writer = HarmonyWriter()
    pieces = [*writer.reason("thinking"), *writer.finish(StopReason.END_OF_STREAM)]
    assert _text(pieces) == "<|channel|>analysis<|message|>thinking<|end|>"


def test_blank_text_before_a_call_is_not_an_answer_and_a_cut_call_is_not_run() -> None:
    writer = HarmonyWriter()
    pieces = [*writer.answer("\n\n"), *writer.call("python", '{"code": "1"}')]
    assert _text(pieces) == "<|channel|>analysis to=python code<|message|>1<|call|>"

    def cut(_body: Any) -> Reply:
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "id": "x", "type": "function",
                              "function": {"name": "python", "arguments": '{"code": "pri'}}]},
                    "finish_reason": "length",
                }
            ],
        }  # fmt: skip
        return 200, "text/event-stream", [f"data: {json.dumps(chunk)}\n\n".encode()]

    generation, pieces = _run("vllm", PROMPT, "chat", {"/v1/chat/completions": cut})
    assert generation.stop_reason is StopReason.MAX_TOKENS
    assert tokens.CALL not in _text(pieces)


def test_a_server_that_templates_raw_prompts_gets_chat() -> None:
    """Ollama's /v1/completions (without its own /api/version to tell it): the probe's first
    token comes back as plain text, which gpt-oss never starts with, so Chat Completions."""
    routes = {
        "/v1/models": SERVERS["vllm"]["/v1/models"],
        "/v1/completions": SERVERS["ollama"]["/v1/completions"],
    }
    with serving(routes) as recorded:
        found = detect(BackendConfig(api_base=recorded.root))
    assert found.dialect == "chat" and "began 'Hello'" in found.reason


def test_the_browser_goes_as_functions_and_comes_back_as_its_own_recipient() -> None:
    from lmc.agent.tools import function_specs, system_message

    specs = {f.name: f for f in function_specs([system_message("low", browser=True)])}
    assert specs["browser_search"].recipient == "browser.search"
    assert specs["python"].recipient is None and "code" in specs["python"].parameters["required"]
    writer = HarmonyWriter()
    pieces = list(writer.call("browser_search", '{"query":"gpt-oss"}', "browser.search"))
    assert _text(pieces) == (
        '<|channel|>analysis to=browser.search code<|message|>{"query":"gpt-oss"}<|call|>'
    )
    prompt = read_prompt(
        PROMPT
        + _text(pieces)
        + "<|start|>browser.search to=assistant<|channel|>analysis<|message|>[0] …<|end|>"
        + "<|start|>assistant"
    )
    call, result = prompt.turns[-2:]
    assert (call.kind, call.name, call.text) == ("call", "browser_search", '{"query":"gpt-oss"}')
    assert (result.kind, result.name, result.call_id) == ("result", "browser_search", call.call_id)


def test_a_server_with_only_the_responses_api_gets_it() -> None:
    from support.recorded_servers import vllm_responses

    routes = {"/v1/models": SERVERS["vllm"]["/v1/models"], "/v1/responses": vllm_responses}
    with serving(routes) as recorded:
        found = detect(BackendConfig(api_base=recorded.root))
    assert found.dialect == "responses"
    generation, pieces = _run("vllm", AFTER_CALL, routes=routes)
    assert generation.stop_reason is StopReason.RETURN and ANSWER in _text(pieces)


def test_reasoning_under_both_names_is_read_once_and_sent_back_as_reasoning() -> None:
    """A server that streams the reasoning under both names (mlx-vlm since its PR #1411) is
    read once; it goes back as "reasoning", the name vLLM 0.11.1+ reads (vllm-project/vllm
    issue #38488: an assistant message's "reasoning_content" is dropped)."""
    from support.recorded_openai import vllm_chat

    def both(body: dict[str, Any] | None) -> Reply:
        return vllm_chat(body, ("reasoning_content", "reasoning"))

    routes = {**SERVERS["vllm"], "/v1/chat/completions": both}
    with serving(routes) as recorded:
        config = BackendConfig(api_base=recorded.root, api_style="chat")
        with open_backend(config) as backend:
            first = _text(list(backend.generate(PROMPT)))
            list(backend.generate(AFTER_CALL))
    assert first.count(REASONING) == 1
    sent = recorded.bodies("/v1/chat/completions")[-1]["messages"]
    [assistant] = [m for m in sent if m["role"] == "assistant" and m.get("tool_calls")]
    assert assistant.get("reasoning") == "Need python." and "reasoning_content" not in assistant


def test_a_patch_call_is_written_raw_and_read_back_as_codexs_arguments() -> None:
    """apply_patch's argument is a string in Harmony (the reference's declaration): the
    server's ``{"input": PATCH}`` is written as the raw patch gpt-oss writes, and read back
    into the same arguments, so the server's id is found again."""
    from lmc.backends._dialogue import call_key

    patch = "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"
    arguments = json.dumps({"input": patch})
    pieces = list(HarmonyWriter().call("apply_patch", arguments))
    assert _text(pieces) == (
        f"<|channel|>commentary to=functions.apply_patch<|message|>{patch}<|call|>"
    )
    key = call_key("apply_patch", arguments)
    prompt = read_prompt(
        PROMPT
        + _text(pieces)
        + "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Done!<|end|>"
        + "<|start|>assistant",
        {key: "call_1"},
    )
    call, result = prompt.turns[-2:]
    assert (call.kind, call.name, call.call_id) == ("call", "apply_patch", "call_1")
    assert json.loads(call.text) == {"input": patch}
    assert (result.kind, result.text, result.call_id) == ("result", "Done!", "call_1")
