"""What the model and the person get from a tool: argument problems, results, progress.

Argument problems name the field and what it expects, written in the same TypeScript-like
types as the tool's signature in the prompt (``b: expected number | null, got "two"``).
A result's text becomes console output and its images image chunks; as gpt-oss reads text
only, each image also gets a one-line note, so the model knows what it cannot see.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from lmc.harmony.schema_ts import schema_to_typescript
from lmc.messages import Chunk, ConsoleChunk, ImageFormat, console_output, text_of

if TYPE_CHECKING:
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

__all__ = ["argument_problems", "output", "progress_chunk", "resource_chunks", "result_chunks"]

_IMAGE_FORMATS: Final[dict[str, ImageFormat]] = {
    "image/png": "base64.png",
    "image/jpeg": "base64.jpeg",
    "image/jpg": "base64.jpeg",
}
#: The most schema problems listed to the model at once.
_MAX_PROBLEMS: Final = 5
#: jsonschema validators whose problem is best said as "expected TYPE, got VALUE".
_TYPED: Final = frozenset({"type", "anyOf", "oneOf", "enum", "const", "$ref", "allOf"})


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else str(p) for p in path]
    return ".".join(parts).replace(".[", "[") if parts else ""


def _type_text(schema: Any, root: Mapping[str, Any]) -> str:
    if isinstance(schema, Mapping) and root is not schema:
        defs = {k: root[k] for k in ("$defs", "definitions") if k in root}
        schema = {**defs, **schema}
    return " ".join(schema_to_typescript(schema).split())


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"


def _problem(error: Any, root: Mapping[str, Any]) -> str:
    where = _where(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = next((r for r in error.validator_value if r not in error.instance), None)
        properties = error.schema.get("properties", {})
        if isinstance(missing, str):
            field = f"{where}.{missing}" if where else missing
            expected = _type_text(properties.get(missing, {}), root)
            return f"{field}: missing (required, expected {expected})"
    if error.validator in _TYPED:
        expected = _type_text(error.schema, root)
        return f"{where or 'the arguments'}: expected {expected}, got {_shown(error.instance)}"
    return f"{where}: {error.message}" if where else error.message


def argument_problems(validator: Any, arguments: object) -> list[str]:
    """Each way ``arguments`` break the tool's schema, naming the field and what it expects."""
    root = validator.schema if isinstance(validator.schema, Mapping) else {}
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    lines = [_problem(error, root) for error in errors[:_MAX_PROBLEMS]]
    if len(errors) > _MAX_PROBLEMS:
        lines.append(f"and {len(errors) - _MAX_PROBLEMS} more")
    return lines


def output(text: str) -> ConsoleChunk:
    """Output text as a line of its own."""
    return console_output(text if not text or text.endswith("\n") else text + "\n")


def progress_chunk(done: float, total: float | None, message: str | None) -> ConsoleChunk:
    """A live status line for a long call (``format: "progress"``; not output the model reads)."""
    amount = f"{done:g}/{total:g}" if total else f"{done:g}"
    text = f"{message} ({amount})" if message else amount
    return {"role": "computer", "type": "console", "format": "progress", "content": text}


def _png_size(data: bytes) -> str:
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return f", {width}x{height}"
    return ""


def _image(mime: str, data: str) -> list[Chunk]:
    try:
        raw = base64.b64decode(data, validate=False)
    except ValueError:
        raw = b""
    fmt = _IMAGE_FORMATS.get(mime.lower(), "base64")
    note = (
        f"[the tool returned an image ({mime}{_png_size(raw)}, {len(raw)} bytes): it is shown "
        "to the user; this model reads text only]"
    )
    return [{"role": "computer", "type": "image", "format": fmt, "content": data}, output(note)]


def _block_chunks(block: Any) -> list[Chunk]:
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    if isinstance(block, TextContent):
        return [output(block.text)]
    if isinstance(block, ImageContent):
        return _image(block.mime_type, block.data)
    if isinstance(block, AudioContent):
        return [output(f"[audio ({block.mime_type}), not shown]")]
    if isinstance(block, ResourceLink):
        return [output(f"[resource {block.name}: {block.uri}]")]
    if isinstance(block, EmbeddedResource):
        return _contents_chunks([block.resource])
    return [output(f"[{getattr(block, 'type', 'unknown')} content, not shown]")]


def _contents_chunks(contents: list[Any]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for item in contents:
        text = getattr(item, "text", None)
        blob = getattr(item, "blob", None)
        mime = getattr(item, "mime_type", None) or ""
        if isinstance(text, str):
            chunks.append(output(text))
        elif isinstance(blob, str) and mime.startswith("image/"):
            chunks.extend(_image(mime, blob))
        else:
            chunks.append(output(f"[binary {mime or 'data'} {item.uri}]"))
    return chunks


def result_chunks(result: CallToolResult) -> list[Chunk]:
    """A tool's result as computer content chunks (console output and images)."""
    chunks: list[Chunk] = []
    if result.is_error:
        chunks.append(output("The tool reported an error:"))
    for block in result.content:
        chunks.extend(_block_chunks(block))
    if not result.content and result.structured_content is not None:
        chunks.append(output(json.dumps(result.structured_content, ensure_ascii=False)))
    if not chunks:
        chunks.append(output("(no output)"))
    return chunks


def resource_chunks(result: ReadResourceResult) -> list[Chunk]:
    return _contents_chunks(list(result.contents)) or [output("(empty resource)")]


def prompt_text(result: GetPromptResult) -> str:
    """A prompt's messages as text to send (the text of each message, one after another)."""
    parts: list[str] = []
    for message in result.messages:
        for chunk in _block_chunks(message.content):
            if chunk["type"] == "console":
                parts.append(text_of(chunk))
    return "".join(parts).strip()
