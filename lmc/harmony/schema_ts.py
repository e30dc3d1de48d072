"""JSON Schema to the TypeScript-like signatures Harmony puts in a ``# Tools`` section.

gpt-oss was trained on tool definitions written as ``type name = (_: {...}) => any;``. This
module writes the ``{...}`` part the way openai-harmony does (the conformance fixtures pin it),
with four deliberate differences that only matter for inputs the fixtures never show:

- a multi-line description becomes one ``// `` comment line per line, so a newline in a
  description cannot leak text out of the comment;
- strings written inside quotes (enum members, examples, quoted defaults) are JSON-escaped;
- an array of a union is parenthesised, ``(number | string)[]``, as TypeScript reads it;
- a nested object's description is written once, above its property.

It never raises: whatever it cannot make sense of (``anyOf``, ``$ref``, a non-object schema,
nesting deeper than :data:`MAX_DEPTH`) becomes ``any``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_DEPTH", "comment_lines", "schema_to_typescript", "split_lines"]

#: Schemas nested deeper than this render as ``any`` (guards recursion and cyclic dicts).
MAX_DEPTH: Final = 32

_INDENT_STEP: Final = "    "
_VARIANT_INDENT: Final = "   "


def split_lines(text: str) -> list[str]:
    """Split like Rust's ``str::lines``, as Harmony does: on ``\\n``, no trailing empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def comment_lines(text: str, indent: str = "") -> str:
    """``text`` as ``// `` comment lines, each ending in a newline."""
    return "".join(f"{indent}// {line}\n" for line in split_lines(text) or [""])


def schema_to_typescript(schema: Any, indent: str = "") -> str:
    """The TypeScript-like type for ``schema``; nested objects indent four more spaces."""
    return _type_of(schema, indent, 0)


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _is_enum(schema: Mapping[str, Any]) -> bool:
    members = schema.get("enum")
    return isinstance(members, list) and bool(members)


def _default_text(schema: Mapping[str, Any]) -> str:
    """``default: ...``: strings quoted unless the schema is an enum, the rest as compact JSON."""
    default = schema["default"]
    if isinstance(default, str):
        return f"default: {default if _is_enum(schema) else _quote(default)}"
    try:
        return "default: " + json.dumps(default, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON (a Python object handed in directly)
        return f"default: {default!r}"


def _with_null(schema: Mapping[str, Any], type_text: str) -> str:
    if schema.get("nullable") is True and "null" not in type_text.split(" | "):
        return f"{type_text} | null"
    return type_text


def _type_of(schema: Any, indent: str, depth: int) -> str:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return "any"
    one_of = schema.get("oneOf")
    if isinstance(one_of, list):
        return _inline_one_of(one_of, indent, depth)
    declared = schema.get("type")
    if isinstance(declared, list):
        names = [("number" if t == "integer" else t) for t in declared if isinstance(t, str)]
        if names:
            return " | ".join(names)
        declared = None
    if not isinstance(declared, str):
        return "any"
    if declared == "object":
        return _object(schema, indent, depth)
    if declared == "string":
        members = schema.get("enum")
        if isinstance(members, list):
            quoted = [_quote(m) for m in members if isinstance(m, str)]
            if quoted:
                return " | ".join(quoted)
        return "string"
    if declared in ("number", "integer"):
        return "number"
    if declared == "boolean":
        return "boolean"
    if declared == "array":
        if "items" not in schema:
            return "Array<any>"
        items = schema["items"]
        variants = items.get("oneOf") if isinstance(items, Mapping) else None
        if isinstance(variants, list) and variants:
            # A plain union: the property-style `` | variant`` lines cannot take ``[]``.
            item = " | ".join(
                _with_null(v, _type_of(v, indent, depth + 1)) if isinstance(v, Mapping) else "any"
                for v in variants
            )
        else:
            item = _type_of(items, indent, depth + 1)
        if " | " in item:
            item = f"({item})"
        return f"{item}[]"
    return "any"


def _trailing_comment(parts: list[str]) -> str:
    text = " ".join(" ".join(split_lines(part)) for part in parts)
    return f" // {text}" if parts else ""


def _inline_one_of(variants: list[Any], indent: str, depth: int) -> str:
    """A ``oneOf`` that is not a property's own type: one `` | variant`` line per variant."""
    out: list[str] = []
    for variant in variants:
        if not isinstance(variant, Mapping):
            out.append(f"\n{indent} | any")
            continue
        text = _with_null(variant, _type_of(variant, indent + _VARIANT_INDENT, depth + 1))
        comments: list[str] = []
        if isinstance(variant.get("description"), str):
            comments.append(variant["description"])
        if "default" in variant:
            comments.append(_default_text(variant))
        out.append(f"\n{indent} | {text}{_trailing_comment(comments)}")
    return "".join(out)


def _object(schema: Mapping[str, Any], indent: str, depth: int) -> str:
    out: list[str] = []
    description = schema.get("description")
    if depth == 0 and isinstance(description, str):
        # Only the parameters object's own description: a nested object's is already written
        # above its property (openai-harmony writes it twice, the second time mid-line).
        out.append(comment_lines(description, indent))
    out.append("{\n")
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        required_list = schema.get("required")
        required = (
            {r for r in required_list if isinstance(r, str)}
            if isinstance(required_list, list)
            else set()
        )
        for key, prop in properties.items():
            name = f"{key}{'' if key in required else '?'}"
            if not isinstance(prop, Mapping):
                out.append(f"{indent}{name}: any,\n")
                continue
            out.append(_property(name, prop, indent, depth))
    out.append(f"{indent}}}")
    return "".join(out)


def _property(name: str, prop: Mapping[str, Any], indent: str, depth: int) -> str:
    out: list[str] = []
    title = prop.get("title")
    if isinstance(title, str):
        out.append(comment_lines(title, indent) + f"{indent}//\n")
    one_of = prop.get("oneOf")
    description = prop.get("description")
    if "oneOf" not in prop and isinstance(description, str):
        out.append(comment_lines(description, indent))
    examples = prop.get("examples")
    if isinstance(examples, list) and examples:
        out.append(f"{indent}// Examples:\n")
        out.extend(f"{indent}// - {_quote(ex)}\n" for ex in examples if isinstance(ex, str))
    if isinstance(one_of, list):
        out.append(_one_of_property(name, prop, one_of, indent, depth))
        return "".join(out)
    type_text = _with_null(prop, _type_of(prop, indent + _INDENT_STEP, depth + 1))
    line = f"{indent}{name}: {type_text},"
    if "oneOf" not in prop and "default" in prop:
        line += f" // {_default_text(prop)}"
    out.append(line + "\n")
    return "".join(out)


def _one_of_property(
    name: str, prop: Mapping[str, Any], variants: list[Any], indent: str, depth: int
) -> str:
    """``name?:`` then one `` | type // comment`` line per variant, then a lone ``,``."""
    out: list[str] = []
    description = prop.get("description")
    prop_desc = description if isinstance(description, str) else None
    first = variants[0] if variants else None
    first_desc = first.get("description") if isinstance(first, Mapping) else None
    desc_above = prop_desc is not None and prop_desc != first_desc
    if desc_above and prop_desc is not None:
        out.append(comment_lines(prop_desc, indent))
    if "default" in prop:
        out.append(f"{indent}// {_default_text(prop)}\n")
    out.append(f"{indent}{name}:\n")
    for i, variant in enumerate(variants):
        if not isinstance(variant, Mapping):
            out.append(f"{indent} | any\n")
            continue
        text = _with_null(variant, _type_of(variant, indent + _VARIANT_INDENT, depth + 1))
        comments: list[str] = []
        variant_desc = variant.get("description")
        if (
            not (i == 0 and desc_above)
            and isinstance(variant_desc, str)
            and (variant_desc != prop_desc)
        ):
            comments.append(variant_desc)
        if "default" in variant:
            comments.append(_default_text(variant))
        out.append(f"{indent} | {text}{_trailing_comment(comments)}\n")
    out.append(f"{indent},\n")
    return "".join(out)
