"""JSON Schema to the TypeScript-like signatures Harmony puts in a ``# Tools`` section.

gpt-oss was trained on tool definitions written as ``type name = (_: {...}) => any;``. This
module writes the ``{...}`` part the way openai-harmony does (the conformance fixtures pin it),
with deliberate differences that only matter for inputs the fixtures never show:

- a multi-line description becomes one ``// `` comment line per line, so a newline in a
  description cannot leak text out of the comment;
- strings written inside quotes (enum members, examples, quoted defaults) are JSON-escaped;
- an array of a union is parenthesised, ``(number | string)[]``, as TypeScript reads it;
- a nested object's description is written once, above its property;
- what MCP servers' schemas hold beyond the fixtures is written precisely instead of ``any``:
  ``anyOf`` (pydantic's ``X | None``) as an inline union, ``allOf`` merged, ``$ref`` to
  ``$defs``/``definitions`` expanded in place (a pydantic model parameter), ``const`` and
  untyped ``enum`` as literals, ``null``, tuples, and ``Record<string, T>`` maps;
- a pydantic-made title (the property name in title case) is left out: it says nothing.

It never raises and is a pure function of the schema (byte-stable): whatever it cannot make
sense of (a non-object schema, a ``$ref`` it cannot resolve or that refers to itself, nesting
deeper than :data:`MAX_DEPTH`) becomes ``any``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MAX_DEPTH", "comment_lines", "schema_to_typescript", "split_lines"]

#: Schemas nested deeper than this render as ``any`` (guards recursion and cyclic dicts).
MAX_DEPTH: Final = 32

_INDENT_STEP: Final = "    "
_VARIANT_INDENT: Final = "   "
_SIMPLE: Final = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean"}


@dataclass(frozen=True, slots=True)
class _Ctx:
    """The root schema (where ``$ref`` points) and the references being expanded."""

    root: Mapping[str, Any]
    expanding: frozenset[str] = frozenset()


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
    ctx = _Ctx(schema if isinstance(schema, Mapping) else {})
    return _type_of(schema, indent, 0, ctx)


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _literal(value: Any) -> str | None:
    """A JSON value as a TypeScript literal type; None for what has none (objects, arrays)."""
    if isinstance(value, str):
        return _quote(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    return None


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


def _resolve(schema: Mapping[str, Any], ctx: _Ctx) -> tuple[Mapping[str, Any], _Ctx] | None:
    """The schema a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) points at, its own
    keys (a description, a default) laid over it; None when it cannot or must not expand."""
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#") or ref in ctx.expanding:
        return None
    target: Any = ctx.root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            return None
        target = target[key]
    if not isinstance(target, Mapping):
        return None
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return merged, _Ctx(ctx.root, ctx.expanding | {ref})


def _merge_all_of(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``allOf`` as one schema: its members' keys merged (properties and required joined)."""
    members = schema["allOf"]
    if not isinstance(members, list) or not all(isinstance(m, Mapping) for m in members):
        return None
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    properties: dict[str, Any] = dict(merged.get("properties") or {})
    required: list[Any] = list(merged.get("required") or [])
    for member in members:
        if "$ref" in member or "allOf" in member:
            return None if len(members) > 1 else {**member, **merged}
        for key, value in member.items():
            if key == "properties" and isinstance(value, Mapping):
                properties.update(value)
            elif key == "required" and isinstance(value, list):
                required += [r for r in value if r not in required]
            else:
                merged.setdefault(key, value)
    if properties:
        merged["properties"] = properties
        merged.setdefault("type", "object")
    if required:
        merged["required"] = required
    return merged


def _type_of(schema: Any, indent: str, depth: int, ctx: _Ctx) -> str:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return "any"
    if "$ref" in schema:
        resolved = _resolve(schema, ctx)
        return "any" if resolved is None else _type_of(resolved[0], indent, depth + 1, resolved[1])
    if "allOf" in schema:
        merged = _merge_all_of(schema)
        return "any" if merged is None else _type_of(merged, indent, depth + 1, ctx)
    one_of = schema.get("oneOf")
    if isinstance(one_of, list):
        return _inline_one_of(one_of, indent, depth, ctx)
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        return _union(any_of, indent, depth, ctx)
    if "const" in schema:
        return _literal(schema["const"]) or "any"
    declared = schema.get("type")
    if isinstance(declared, list):
        names = [("number" if t == "integer" else t) for t in declared if isinstance(t, str)]
        if names:
            return " | ".join(dict.fromkeys(names))
        declared = None
    if declared is None and _is_enum(schema):
        literals = [_literal(m) for m in schema["enum"]]
        return " | ".join(dict.fromkeys(t for t in literals if t is not None)) or "any"
    if not isinstance(declared, str):
        return "any"
    return _typed(declared, schema, indent, depth, ctx)


def _typed(declared: str, schema: Mapping[str, Any], indent: str, depth: int, ctx: _Ctx) -> str:
    if declared == "object":
        return _object_or_map(schema, indent, depth, ctx)
    if declared == "string":
        members = schema.get("enum")
        if isinstance(members, list):
            quoted = [_quote(m) for m in members if isinstance(m, str)]
            if quoted:
                return " | ".join(quoted)
        return "string"
    if declared in ("number", "integer") and _is_enum(schema):
        numbers = [json.dumps(m) for m in schema["enum"] if isinstance(m, int | float)]
        return " | ".join(numbers) or "number"
    if declared in _SIMPLE:
        return _SIMPLE[declared]
    if declared == "array":
        return _array(schema, indent, depth, ctx)
    return "any"  # a lone ``null`` too, as in harmony (in a union it is written ``null``)


def _array(schema: Mapping[str, Any], indent: str, depth: int, ctx: _Ctx) -> str:
    items = schema.get("prefixItems", schema.get("items"))
    if isinstance(items, list):  # a tuple
        return "[" + ", ".join(_type_of(i, indent, depth + 1, ctx) for i in items) + "]"
    if "items" not in schema:
        return "Array<any>"
    variants = items.get("oneOf") if isinstance(items, Mapping) else None
    if isinstance(variants, list) and variants:
        # A plain union: the property-style `` | variant`` lines cannot take ``[]``.
        item = " | ".join(
            _with_null(v, _type_of(v, indent, depth + 1, ctx)) if isinstance(v, Mapping) else "any"
            for v in variants
        )
    else:
        item = _type_of(items, indent, depth + 1, ctx)
    if _top_level_union(item):
        item = f"({item})"
    return f"{item}[]"


def _top_level_union(text: str) -> bool:
    """Whether ``text`` is a union at its top level (not only inside braces or brackets)."""
    depth = 0
    for i, char in enumerate(text):
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif depth == 0 and text.startswith(" | ", i):
            return True
    return False


def _union(variants: list[Any], indent: str, depth: int, ctx: _Ctx) -> str:
    """``anyOf`` as an inline union, ``null`` last (``number | null`` for ``X | None``)."""
    types: list[str] = []
    for variant in variants:
        if isinstance(variant, Mapping) and variant.get("type") == "null":
            types.append("null")
            continue
        text = _type_of(variant, indent, depth + 1, ctx)
        if isinstance(variant, Mapping):
            text = _with_null(variant, text)
        types += [t for t in text.split(" | ") if "\n" not in text] or [text]
    if any(t == "any" for t in types):
        return "any"
    unique = list(dict.fromkeys(types))
    unique.sort(key=lambda t: t == "null")
    return " | ".join(unique)


def _trailing_comment(parts: list[str]) -> str:
    text = " ".join(" ".join(split_lines(part)) for part in parts)
    return f" // {text}" if parts else ""


def _inline_one_of(variants: list[Any], indent: str, depth: int, ctx: _Ctx) -> str:
    """A ``oneOf`` that is not a property's own type: one `` | variant`` line per variant."""
    out: list[str] = []
    for variant in variants:
        if not isinstance(variant, Mapping):
            out.append(f"\n{indent} | any")
            continue
        text = _with_null(variant, _type_of(variant, indent + _VARIANT_INDENT, depth + 1, ctx))
        comments: list[str] = []
        if isinstance(variant.get("description"), str):
            comments.append(variant["description"])
        if "default" in variant:
            comments.append(_default_text(variant))
        out.append(f"\n{indent} | {text}{_trailing_comment(comments)}")
    return "".join(out)


def _object_or_map(schema: Mapping[str, Any], indent: str, depth: int, ctx: _Ctx) -> str:
    extra = schema.get("additionalProperties")
    if "properties" not in schema and isinstance(extra, Mapping):
        return f"Record<string, {_type_of(extra, indent, depth + 1, ctx)}>"
    return _object(schema, indent, depth, ctx)


def _object(schema: Mapping[str, Any], indent: str, depth: int, ctx: _Ctx) -> str:
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
            out.append(_property(str(key), name, prop, indent, depth, ctx=ctx))
    out.append(f"{indent}}}")
    return "".join(out)


def _model_description(prop: Mapping[str, Any], ctx: _Ctx) -> str | None:
    """The description of the model a property refers to (``Model`` or ``Model | None``)."""
    variants = prop.get("anyOf")
    refs = [prop, *(variants if isinstance(variants, list) else [])]
    for candidate in refs:
        if isinstance(candidate, Mapping) and "$ref" in candidate:
            resolved = _resolve(candidate, ctx)
            description = resolved[0].get("description") if resolved is not None else None
            if isinstance(description, str):
                return description
    return None


def _made_title(key: str, title: str) -> bool:
    """Whether ``title`` is the one pydantic makes from the property name (``max_items``:
    ``Max Items``), which tells the model nothing."""
    return title == key.replace("_", " ").title() or title == key


def _property(
    key: str, name: str, prop: Mapping[str, Any], indent: str, depth: int, *, ctx: _Ctx
) -> str:
    out: list[str] = []
    if "description" not in prop:
        description = _model_description(prop, ctx)
        if description is not None:  # a model's docstring describes the parameter
            prop = {**prop, "description": description}
    title = prop.get("title")
    if isinstance(title, str) and not _made_title(key, title):
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
        out.append(_one_of_property(name, prop, one_of, indent, depth=depth, ctx=ctx))
        return "".join(out)
    type_text = _with_null(prop, _type_of(prop, indent + _INDENT_STEP, depth + 1, ctx))
    line = f"{indent}{name}: {type_text},"
    if "oneOf" not in prop and "default" in prop:
        line += f" // {_default_text(prop)}"
    out.append(line + "\n")
    return "".join(out)


def _one_of_property(
    name: str,
    prop: Mapping[str, Any],
    variants: list[Any],
    indent: str,
    *,
    depth: int,
    ctx: _Ctx,
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
        text = _with_null(variant, _type_of(variant, indent + _VARIANT_INDENT, depth + 1, ctx))
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
