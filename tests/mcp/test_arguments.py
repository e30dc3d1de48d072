"""Argument problems name the field and what it expects (in the signature's own types).

On main a wrong ``int | None`` argument got "... is not valid under any of the given schemas"
without naming the field."""

from __future__ import annotations

import pytest

from lmc.mcp.tools import ArgumentsError, McpTool, McpTools, _validator

SCHEMA = {
    "type": "object",
    "properties": {
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "person": {"$ref": "#/$defs/Person"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["mode"],
    "$defs": {
        "Person": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"],
        }
    },
}


def _tool() -> McpTool:
    return McpTool("srv", "meet", "Meet someone.", SCHEMA, validator=_validator(SCHEMA))


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ('{"mode": "fast", "limit": "ten"}', 'limit: expected number | null, got "ten"'),
        ('{"mode": "quick"}', 'mode: expected "fast" | "slow", got "quick"'),
        ("{}", 'mode: missing (required, expected "fast" | "slow")'),
        (
            '{"mode": "slow", "person": {"age": "old"}}',
            "person.name: missing (required, expected string); person.age: expected number, got "
            '"old"',
        ),
        ('{"mode": "slow", "tags": ["a", 2]}', "tags[1]: expected string, got 2"),
    ],
)
def test_problems_name_the_field_and_the_expected_type(arguments: str, problems: str) -> None:
    tools = McpTools({})
    with pytest.raises(ArgumentsError) as caught:
        tools.arguments(_tool(), arguments)
    assert str(caught.value) == (
        f"The arguments to functions.srv__meet do not match its schema: {problems}. Call it "
        "again with arguments that match the schema."
    )


def test_good_arguments_pass() -> None:
    assert McpTools({}).arguments(_tool(), '{"mode": "fast", "limit": null}') == {
        "mode": "fast",
        "limit": None,
    }
