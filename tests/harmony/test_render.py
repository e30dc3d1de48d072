"""The Harmony renderer, its conversation values and JSON Schema signatures: the edge cases
the conformance fixtures do not pin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmc.errors import HarmonyError
from lmc.harmony.conversation import (
    DEFAULT_PYTHON_DESCRIPTION,
    ChannelConfig,
    Conversation,
    DeveloperContent,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
    browser_tool_namespace,
    message_from_json,
    python_tool_namespace,
)
from lmc.harmony.render import render_conversation, render_message, render_system_content
from lmc.harmony.schema_ts import schema_to_typescript
from lmc.harmony.types import Message, TextContent

FIXTURES = Path(__file__).parent.parent / "fixtures" / "harmony"
CASES = {c["name"]: c for c in json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))}


def user(text: str) -> Message:
    return Message.from_text("user", text)


def assistant(text: str, channel: str, **kw: Any) -> Message:
    return Message.from_text("assistant", text, channel=channel, **kw)


# --- one message ---------------------------------------------------------------------------


def test_header_order_recipient_channel_content_type_and_call() -> None:
    msg = assistant(
        '{"x": 1}', "commentary", recipient="functions.f", content_type="<|constrain|>json"
    )
    assert render_message(msg) == (
        "<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>"
        '{"x": 1}<|call|>'
    )


def test_recipient_all_is_not_written_and_is_not_a_call() -> None:
    msg = assistant("hi", "final", recipient="all")
    assert render_message(msg) == "<|start|>assistant<|channel|>final<|message|>hi<|end|>"


def test_tool_message_is_written_as_the_tool_name() -> None:
    msg = Message.from_text("tool", "4", name="python", recipient="assistant", channel="analysis")
    assert render_message(msg) == (
        "<|start|>python to=assistant<|channel|>analysis<|message|>4<|end|>"
    )


def test_named_non_tool_author_is_role_colon_name() -> None:
    assert render_message(Message.from_text("user", "hi", name="ann")) == (
        "<|start|>user:ann<|message|>hi<|end|>"
    )


def test_return_is_never_written() -> None:
    text = render_conversation([user("q"), assistant("a", "final")], next_role=None)
    assert text.endswith("<|message|>a<|end|>")
    assert "<|return|>" not in text


def test_several_contents_are_concatenated() -> None:
    msg = Message("user", [TextContent("a"), TextContent("b")])
    assert render_message(msg) == "<|start|>user<|message|>ab<|end|>"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (Message("tool", [TextContent("x")]), "tool message needs"),
        (Message("robot", [TextContent("x")]), "unknown role 'robot'"),
        (Message("user", [SystemContent()]), "system content may only appear"),
        (Message("system", [DeveloperContent()]), "developer content may only appear"),
        (Message("user", ["plain str"]), "cannot render message content of type str"),
    ],
)
def test_unrenderable_messages_raise_harmony_error(message: Message, error: str) -> None:
    with pytest.raises(HarmonyError, match=error):
        render_message(message)


# --- conversations ---------------------------------------------------------------------------


def test_completion_prompt_role_and_none() -> None:
    assert render_conversation([user("q")]).endswith("<|end|><|start|>assistant")
    assert render_conversation([user("q")], next_role="user").endswith("<|start|>user")
    assert render_conversation([user("q")], next_role=None) == "<|start|>user<|message|>q<|end|>"
    assert render_conversation(Conversation()) == "<|start|>assistant"


def test_analysis_kept_while_the_turn_is_in_tool_calls() -> None:
    messages = [
        user("q"),
        assistant("think", "analysis"),
        assistant("a", "final"),
        user("q2"),
        assistant("think2", "analysis"),
        assistant("print(1)", "analysis", recipient="python"),
        Message.from_text("tool", "1", name="python", channel="analysis"),
    ]
    text = render_conversation(messages)
    assert "think<|end|>" in text and "think2" in text


def test_analysis_before_first_final_dropped_only_when_last_assistant_is_final() -> None:
    messages = [user("q"), assistant("think", "analysis"), assistant("a", "final"), user("q2")]
    assert "think" not in render_conversation(messages)
    assert "think" in render_conversation(messages, auto_drop_analysis=False)
    # No final answer at all: nothing to drop.
    assert "think" in render_conversation([user("q"), assistant("think", "analysis")])


# --- system and developer content ---------------------------------------------------------------


def test_system_defaults() -> None:
    assert render_system_content(SystemContent()) == (
        "You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\n\n"
        "Reasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every message."
    )


def test_system_sections_left_out_when_unset() -> None:
    content = SystemContent(
        model_identity=None,
        reasoning_effort=None,
        knowledge_cutoff=None,
        channel_config=ChannelConfig(["final"], channel_required=False),
    )
    assert render_system_content(content) == "# Valid channels: final."
    assert render_system_content(SystemContent(model_identity=None, channel_config=None)) == (
        "Knowledge cutoff: 2024-06\n\nReasoning: medium"
    )
    assert render_system_content(SystemContent(channel_config=ChannelConfig([]))).endswith(
        "Reasoning: medium"
    )


def _with_functions(tools: list[ToolDescription]) -> Message:
    return Message(
        "developer",
        [DeveloperContent(tools={"functions": ToolNamespaceConfig("functions", None, tools)})],
    )


def test_functions_line_only_when_a_developer_message_has_function_tools() -> None:
    system = Message("system", [SystemContent()])
    line = "Calls to these tools must go to the commentary channel: 'functions'."
    with_tools = render_conversation([system, _with_functions([ToolDescription("f")])])
    assert f"every message.\n{line}<|end|>" in with_tools
    assert line not in render_conversation([system, _with_functions([])])
    assert line not in render_conversation([system])


def test_builtin_namespaces_match_openai_harmony() -> None:
    case = CASES["test_browser_and_python_tool"]
    system = SystemContent(
        conversation_start_date="2025-06-28",
        tools={"python": python_tool_namespace(), "browser": browser_tool_namespace()},
    )
    assert render_conversation([Message("system", [system])]) == case["expected"]
    given_tools = case["conversation"]["messages"][0]["content"][0]["tools"]
    assert ToolNamespaceConfig.from_json(given_tools["browser"]) == browser_tool_namespace()
    assert python_tool_namespace().description == DEFAULT_PYTHON_DESCRIPTION
    assert python_tool_namespace("Run code.").description == "Run code."


def test_namespaces_are_sorted_and_tool_shapes() -> None:
    dev = DeveloperContent(
        tools={
            "zeta": ToolNamespaceConfig("zeta"),
            "alpha": ToolNamespaceConfig(
                "alpha",
                "First line.\nSecond line.",
                [ToolDescription("noargs", "Does it.\nTwice."), ToolDescription("nodesc")],
            ),
        }
    )
    text = render_message(Message("developer", [dev]))
    assert text == (
        "<|start|>developer<|message|># Tools\n\n"
        "## alpha\n\n// First line.\n// Second line.\nnamespace alpha {\n\n"
        "// Does it.\n// Twice.\ntype noargs = () => any;\n\n"
        "type nodesc = () => any;\n\n"
        "} // namespace alpha\n\n"
        "## zeta\n<|end|>"
    )


def test_response_formats_as_the_harmony_guide_shows() -> None:
    schema = {
        "properties": {
            "items": {
                "type": "array",
                "description": "entries on the shopping list",
                "items": {"type": "string"},
            }
        },
        "type": "object",
    }
    dev = DeveloperContent(
        instructions="You are a helpful shopping assistant",
        response_formats=[ResponseFormat("shopping_list", schema)],
    )
    assert render_message(Message("developer", [dev])) == (
        "<|start|>developer<|message|># Instructions\n\nYou are a helpful shopping assistant\n\n"
        "# Response Formats\n\n## shopping_list\n\n"
        '{"properties":{"items":{"type":"array","description":"entries on the shopping list",'
        '"items":{"type":"string"}}},"type":"object"}<|end|>'
    )
    described = DeveloperContent(
        response_formats=[ResponseFormat("a", {"type": "string"}, "Just text.")]
    )
    assert render_message(Message("developer", [described])) == (
        "<|start|>developer<|message|># Response Formats\n\n## a\n\n// Just text.\n"
        '{"type":"string"}<|end|>'
    )


def test_unserialisable_response_format_schema_is_a_harmony_error() -> None:
    dev = DeveloperContent(response_formats=[ResponseFormat("bad", {"x": object()})])
    with pytest.raises(HarmonyError, match="response format 'bad'"):
        render_message(Message("developer", [dev]))


# --- JSON Schema to TypeScript ------------------------------------------------------------------


def test_nested_objects_indent_four_more() -> None:
    schema = {
        "type": "object",
        "properties": {
            "outer": {
                "type": "object",
                "description": "The outer one.",
                "properties": {
                    "inner": {"type": "string"},
                    "deeper": {"type": "object", "properties": {"x": {"type": "integer"}}},
                },
                "required": ["inner"],
            },
        },
        "required": ["outer"],
    }
    assert schema_to_typescript(schema) == (
        "{\n"
        "// The outer one.\n"
        "outer: {\n"
        "    inner: string,\n"
        "    deeper?: {\n"
        "        x?: number,\n"
        "        },\n"
        "    },\n"
        "}"
    )


@pytest.mark.parametrize(
    ("prop", "line"),
    [
        ({"type": "integer"}, "p?: number,"),
        ({"type": ["integer", "string", 3]}, "p?: number | string,"),
        ({"type": "string", "nullable": True}, "p?: string | null,"),
        ({"type": ["string", "null"], "nullable": True}, "p?: string | null,"),
        ({"type": "string", "enum": ["a", 'q"uote', 1]}, 'p?: "a" | "q\\"uote",'),
        ({"type": "array"}, "p?: Array<any>,"),
        ({"type": "array", "items": {"type": "boolean"}}, "p?: boolean[],"),
        ({"type": "array", "items": {"type": ["number", "string"]}}, "p?: (number | string)[],"),
        (
            {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "number"}]}},
            "p?: (string | number)[],",
        ),
        ({"anyOf": [{"type": "string"}]}, "p?: string,"),
        ({"$ref": "#/defs/x"}, "p?: any,"),
        ({}, "p?: any,"),
        ({"type": "null"}, "p?: any,"),
        ({"type": "string", "default": "x"}, 'p?: string, // default: "x"'),
        ({"type": "string", "enum": ["x"], "default": "x"}, 'p?: "x", // default: x'),
        ({"type": "number", "default": 1.5}, "p?: number, // default: 1.5"),
        ({"type": "boolean", "default": True}, "p?: boolean, // default: true"),
        (
            {"type": "object", "default": {"a": [1, None]}},
            'p?: {\n    }, // default: {"a":[1,null]}',
        ),
    ],
)
def test_property_types(prop: dict[str, Any], line: str) -> None:
    assert schema_to_typescript({"type": "object", "properties": {"p": prop}}) == (
        "{\n" + line + "\n}"
    )


def test_title_description_and_examples() -> None:
    prop = {
        "type": "string",
        "title": "T",
        "description": "Line one.\nLine two.",
        "examples": ["a", 2, "b"],
    }
    assert schema_to_typescript({"type": "object", "properties": {"p": prop}}) == (
        '{\n// T\n//\n// Line one.\n// Line two.\n// Examples:\n// - "a"\n// - "b"\np?: string,\n}'
    )


def test_one_of_property_dedupes_the_first_variant_description() -> None:
    prop = {
        "oneOf": [
            {"type": "string", "description": "same"},
            {"type": "number", "nullable": True, "description": "other", "default": 2},
        ],
        "description": "same",
    }
    schema = {"type": "object", "properties": {"p": prop}, "required": ["p"]}
    assert schema_to_typescript(schema) == (
        "{\np:\n | string\n | number | null // other default: 2\n,\n}"
    )


def test_cyclic_and_deep_schemas_end_in_any() -> None:
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    assert schema_to_typescript(cyclic).count("self?:") > 10
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "array", "items": deep}
    assert schema_to_typescript(deep).startswith("any[]")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "items",
                    "oneOf",
                    "enum",
                    "default",
                    "description",
                    "title",
                    "examples",
                    "nullable",
                    "required",
                    "x",
                ]
            )
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_odd_schemas_never_crash(schema: Any) -> None:
    assert isinstance(schema_to_typescript(schema), str)
    tool = ToolDescription("t", "d", schema if isinstance(schema, dict) else None)
    dev = DeveloperContent(tools={"functions": ToolNamespaceConfig("functions", None, [tool])})
    assert render_message(Message("developer", [dev])).endswith("<|end|>")


# --- reading JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["low", "Low", "LOW", "lOw"])
def test_reasoning_effort_any_case(spelling: str) -> None:
    content = SystemContent.from_json({"reasoning_effort": spelling})
    assert content.reasoning_effort is ReasoningEffort.LOW
    assert content.to_json()["reasoning_effort"] == "Low"


def test_absent_fields_take_defaults_and_null_clears_them() -> None:
    assert SystemContent.from_json({}) == SystemContent()
    cleared = SystemContent.from_json(
        {
            "model_identity": None,
            "reasoning_effort": None,
            "knowledge_cutoff": None,
            "channel_config": None,
        }
    )
    assert cleared == SystemContent(None, None, None, None, None)
    assert SystemContent.from_json(cleared.to_json()) == cleared


def test_message_round_trip_and_plain_string_content() -> None:
    data = {
        "role": "assistant",
        "name": None,
        "content": [{"type": "text", "text": "hi"}],
        "channel": "commentary",
        "recipient": "functions.f",
        "content_type": "<|constrain|>json",
    }
    message = message_from_json(data)
    assert message.to_json() == data
    assert message_from_json({"role": "user", "content": "hi"}) == user("hi")


def test_developer_content_round_trip() -> None:
    dev = DeveloperContent(
        instructions="Be brief.",
        tools={
            "functions": ToolNamespaceConfig(
                "functions", None, [ToolDescription("f", "d", {"type": "object"})]
            )
        },
        response_formats=[ResponseFormat("r", {"type": "object"}, "desc")],
    )
    message = Message("developer", [dev])
    assert message_from_json(json.loads(json.dumps(message.to_json()))) == message


def test_namespace_name_defaults_to_its_key() -> None:
    content = DeveloperContent.from_json({"tools": {"functions": {"tools": [{"name": "f"}]}}})
    assert content.tools is not None
    assert content.tools["functions"] == ToolNamespaceConfig(
        "functions", None, [ToolDescription("f")]
    )


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (None, "a conversation must be a JSON object"),
        ({}, "conversation: missing 'messages'"),
        ({"messages": {}}, "conversation.messages: expected a list, got an object"),
        ({"messages": [3]}, r"messages\[0\]: expected an object, got a number"),
        ({"messages": [{"content": []}]}, r"messages\[0\]: missing 'role'"),
        ({"messages": [{"role": 1, "content": []}]}, "role: expected a string, got a number"),
        ({"messages": [{"role": "god", "content": []}]}, "unknown role 'god'"),
        ({"messages": [{"role": "user", "content": 5}]}, "content: expected a list"),
        ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "missing 'type'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image"}]}]},
            "unknown content type 'image'",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "missing 'text'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "system_content"}]}]},
            "only appear in a system message",
        ),
        (
            {"messages": [{"role": "user", "content": [], "channel": 1}]},
            "channel: expected a string or null",
        ),
        (
            {
                "messages": [
                    {
                        "role": "system",
                        "content": [{"type": "system_content", "reasoning_effort": "max"}],
                    }
                ]
            },
            "reasoning_effort: expected one of low, medium, high, got the string 'max'",
        ),
        (
            {
                "messages": [
                    {
                        "role": "system",
                        "content": [{"type": "system_content", "reasoning_effort": 2}],
                    }
                ]
            },
            "got a number",
        ),
        (
            {
                "messages": [
                    {
                        "role": "system",
                        "content": [
                            {"type": "system_content", "channel_config": {"valid_channels": "x"}}
                        ],
                    }
                ]
            },
            "valid_channels: expected a list of strings",
        ),
        (
            {
                "messages": [
                    {
                        "role": "system",
                        "content": [
                            {
                                "type": "system_content",
                                "channel_config": {"valid_channels": [], "channel_required": 1},
                            }
                        ],
                    }
                ]
            },
            "channel_required: expected a boolean, got a number",
        ),
        (
            {
                "messages": [
                    {"role": "developer", "content": [{"type": "developer_content", "tools": []}]}
                ]
            },
            "tools: expected an object of namespaces",
        ),
        (
            {
                "messages": [
                    {
                        "role": "developer",
                        "content": [
                            {
                                "type": "developer_content",
                                "tools": {
                                    "functions": {"tools": [{"name": "f", "parameters": True}]}
                                },
                            }
                        ],
                    }
                ]
            },
            r"tools\.functions\.tools\[0\]\.parameters: expected a JSON Schema object",
        ),
        (
            {
                "messages": [
                    {
                        "role": "developer",
                        "content": [
                            {
                                "type": "developer_content",
                                "tools": {"functions": {"tools": [{"description": "f"}]}},
                            }
                        ],
                    }
                ]
            },
            "missing 'name'",
        ),
        (
            {
                "messages": [
                    {
                        "role": "developer",
                        "content": [
                            {"type": "developer_content", "response_formats": [{"name": "r"}]}
                        ],
                    }
                ]
            },
            "missing 'schema'",
        ),
        ({"messages": [{"role": "tool", "content": []}]}, "a tool message needs"),
    ],
)
def test_bad_json_is_a_one_line_harmony_error(data: Any, error: str) -> None:
    with pytest.raises(HarmonyError, match=error) as caught:
        Conversation.from_json(data)
    assert "\n" not in str(caught.value)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=6)
        | st.sampled_from(
            [
                "user",
                "system",
                "developer",
                "tool",
                "text",
                "system_content",
                "developer_content",
                "High",
            ]
        ),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "messages",
                        "role",
                        "content",
                        "type",
                        "text",
                        "name",
                        "channel",
                        "recipient",
                        "tools",
                        "reasoning_effort",
                        "channel_config",
                        "valid_channels",
                        "instructions",
                        "parameters",
                    ]
                ),
                children,
                max_size=5,
            )
        ),
        max_leaves=25,
    )
)
def test_random_json_only_ever_raises_harmony_error(data: Any) -> None:
    try:
        conversation = Conversation.from_json(data)
    except HarmonyError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(render_conversation(conversation), str)
