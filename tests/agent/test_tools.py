"""Tool definitions, the opening messages, and reading calls the way real models write them."""

from __future__ import annotations

import os

import pytest

from lmc.agent.tools import (
    ToolCallError,
    code_from_call,
    developer_message,
    resolve_call,
    system_message,
)
from lmc.errors import HarmonyError
from lmc.harmony.render import render_conversation


def test_opening_messages_say_where_the_model_runs_and_what_it_can_call() -> None:
    from datetime import date

    text = render_conversation(
        [system_message("high", date(2025, 6, 28)), developer_message("Be brief.", "/tmp/w")],
        next_role=None,
    )
    assert "Current date: 2025-06-28" in text
    assert "Reasoning: high" in text
    assert "## python" in text and "/mnt/data" not in text  # described as it really is here
    assert "may decline" in text
    assert "Calls to these tools must go to the commentary channel: 'functions'." in text
    assert "Working directory: /tmp/w" in text
    assert "type shell = (_: {\n// The code to run.\ncode: string,\n}) => any;" in text
    assert "Be brief." in text
    assert os.uname().sysname in text


def test_bad_reasoning_effort_is_a_harmony_error() -> None:
    with pytest.raises(HarmonyError):
        system_message("extreme")


@pytest.mark.parametrize(
    ("recipient", "channel", "language", "author", "result_channel"),
    [
        ("python", "analysis", "python", "python", "analysis"),
        ("python", "commentary", "python", "python", "commentary"),
        ("python code", "analysis", "python", "python", "analysis"),
        ("functions.python", "commentary", "python", "functions.python", "commentary"),
        ("functions.shell", "commentary", "shell", "functions.shell", "commentary"),
        ("functions.shell json", "analysis", "shell", "functions.shell", "commentary"),
        ("functions.nope", "commentary", None, "functions.nope", "commentary"),
        ("browser.search", "analysis", None, "browser.search", "analysis"),
    ],
)
def test_recipients_as_real_models_write_them(
    recipient: str, channel: str, language: str | None, author: str, result_channel: str
) -> None:
    target = resolve_call(recipient, channel)
    assert (target.language, target.author, target.channel) == (language, author, result_channel)


def test_code_from_calls() -> None:
    python = resolve_call("python", "analysis")
    assert code_from_call(python, "print(1)\n") == "print(1)\n"
    assert code_from_call(python, '{"code": "print(2)"}') == "print(2)"
    assert code_from_call(python, "{1: 2}") == "{1: 2}"  # a dict literal is code
    alias = resolve_call("functions.python", "commentary")
    assert code_from_call(alias, '{"code":"x = 1"}') == "x = 1"
    assert code_from_call(alias, "x = 1") == "x = 1"
    shell = resolve_call("functions.shell", "commentary")
    assert code_from_call(shell, '{"code": "ls -l"}') == "ls -l"
    assert code_from_call(shell, "ls -l") == "ls -l"  # raw code, as for python
    assert code_from_call(resolve_call("shell", "commentary"), '{"code": "echo a"}') == "echo a"
    assert code_from_call(python, ' {"code": "x"}', "<|constrain|>json") == "x"
    with pytest.raises(ToolCallError, match="not valid JSON"):
        code_from_call(shell, '{"code": "ls')
    with pytest.raises(ToolCallError, match='need a "code" string'):
        code_from_call(shell, '{"path": "ls"}')
    assert code_from_call(shell, '{"cmd": "ls"}') == "ls"  # as the person is shown it
    with pytest.raises(
        ToolCallError, match=r"no tool named 'functions\.nope'.*python, functions\.shell"
    ):
        code_from_call(resolve_call("functions.nope", "commentary"), "{}")


def test_argument_schemas_cover_every_function_tool_with_parameters() -> None:
    from lmc.agent.tools import argument_schemas
    from lmc.harmony.conversation import DeveloperContent, ToolDescription, ToolNamespaceConfig
    from lmc.harmony.types import Message as HarmonyMessage

    extra = HarmonyMessage(
        "developer",
        [
            DeveloperContent(
                tools={
                    "weather": ToolNamespaceConfig(
                        "weather",
                        None,
                        [
                            ToolDescription("now", "", {"type": "object", "properties": {}}),
                            ToolDescription("bare", ""),
                        ],
                    )
                }
            )
        ],
    )
    schemas = argument_schemas([system_message("low"), developer_message(), extra])
    assert schemas["functions.shell"]["required"] == ["code"]
    assert "weather.now" in schemas and "weather.bare" not in schemas
    assert "python" not in schemas  # raw code, no arguments
