"""JSON Schema as MCP servers send it (pydantic through the SDK, zod, hand-written) rendered as
precise TypeScript-like signatures. On main each of these rendered ``any``."""

from __future__ import annotations

import json
from typing import Any, Literal

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from lmc.harmony.schema_ts import schema_to_typescript


class Address(BaseModel):
    """Where someone lives."""

    street: str
    zip: str | None = None


class Person(BaseModel):
    name: str = Field(description="Full name")
    home: Address | None = None
    kind: Literal["friend", "colleague"] = "friend"


def _sdk_schema() -> dict[str, Any]:
    """The input schema the official SDK makes for a function with these parameters."""
    server = MCPServer("schemas")

    @server.tool()
    def meet(
        a: int,
        b: int | None = None,
        ratio: float | str = 1.0,
        person: Person | None = None,
        people: list[Person] | None = None,
        scores: dict[str, int] | None = None,
        pair: tuple[int, str] = (1, "a"),
    ) -> str:
        return ""

    del meet
    [tool] = anyio.run(server.list_tools)
    return dict(tool.input_schema)


PERSON = (
    "{\n"
    "    // Full name\n"
    "    name: string,\n"
    "    // Where someone lives.\n"
    "    home?: {\n"
    "        street: string,\n"
    "        zip?: string | null, // default: null\n"
    "        } | null, // default: null\n"
    '    kind?: "friend" | "colleague", // default: friend\n'
    "    }"
)


def test_the_sdks_pydantic_schemas_render_precisely() -> None:
    schema = _sdk_schema()
    assert schema_to_typescript(schema) == (
        "{\n"
        "a: number,\n"
        "b?: number | null, // default: null\n"
        "ratio?: number | string, // default: 1.0\n"
        f"person?: {PERSON} | null, // default: null\n"
        f"people?: {PERSON}[] | null, // default: null\n"
        "scores?: Record<string, number> | null, // default: null\n"
        'pair?: [number, string], // default: [1,"a"]\n'
        "}"
    )


def test_rendering_is_byte_stable() -> None:
    schema = _sdk_schema()
    first = schema_to_typescript(schema)
    assert schema_to_typescript(json.loads(json.dumps(schema))) == first
    assert schema_to_typescript(_sdk_schema()) == first


@pytest.mark.parametrize(
    ("prop", "line"),
    [
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "p?: number | null,"),
        ({"anyOf": [{"type": "null"}, {"type": "string"}]}, "p?: string | null,"),
        ({"anyOf": [{"type": "string"}, {}]}, "p?: any,"),
        ({"const": "fixed"}, 'p?: "fixed",'),
        ({"enum": [1, "two", None]}, 'p?: 1 | "two" | null,'),
        ({"type": "integer", "enum": [1, 2]}, "p?: 1 | 2,"),
        ({"type": ["string", "null"]}, "p?: string | null,"),
        (
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "p?: (string | number)[],",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "boolean"}},
            "p?: Record<string, boolean>,",
        ),
        ({"allOf": [{"type": "string"}]}, "p?: string,"),
        (
            {"allOf": [{"$ref": "#/$defs/Color"}], "description": "Paint."},
            '// Paint.\np?: "red" | "green",',
        ),
        ({"$ref": "#/$defs/Color", "default": "red"}, 'p?: "red" | "green", // default: "red"'),
        ({"$ref": "#/$defs/Missing"}, "p?: any,"),
        ({"$ref": "https://example.com/schema"}, "p?: any,"),
        ({"type": "string", "title": "P"}, "p?: string,"),  # pydantic's own title: left out
    ],
)
def test_property_types(prop: dict[str, Any], line: str) -> None:
    schema = {
        "type": "object",
        "properties": {"p": prop},
        "$defs": {"Color": {"type": "string", "enum": ["red", "green"]}},
    }
    assert schema_to_typescript(schema) == "{\n" + line + "\n}"


def test_zod_style_schema() -> None:
    # As zod-to-json-schema writes it (the everything server's tools).
    schema = {
        "type": "object",
        "properties": {
            "messageType": {
                "type": "string",
                "enum": ["error", "success", "debug"],
                "description": "Type of message to demonstrate different annotation patterns",
            },
            "includeImage": {
                "type": "boolean",
                "default": False,
                "description": "Whether to include an example image",
            },
        },
        "required": ["messageType"],
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }
    assert schema_to_typescript(schema) == (
        "{\n"
        "// Type of message to demonstrate different annotation patterns\n"
        'messageType: "error" | "success" | "debug",\n'
        "// Whether to include an example image\n"
        "includeImage?: boolean, // default: false\n"
        "}"
    )


def test_a_recursive_model_ends_in_any_without_looping() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    assert schema_to_typescript(schema) == (
        "{\ntree?: {\n    value?: number,\n    children?: any[],\n    },\n}"
    )
