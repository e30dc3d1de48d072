"""MCP servers' tools as the agent's external tools (:class:`lmc.agent.tool_calls.ExternalTools`).

Each tool is offered as the Harmony function ``functions.SERVER__TOOL`` (two underscores, as
Codex names MCP tools) with its description and input schema. Arguments are checked against
that schema with jsonschema before the call, so the model is told exactly what is wrong; the
result's text becomes console output, its images image chunks, an error output the model
reads.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmc.harmony.conversation import ToolDescription
from lmc.harmony.to_lmc import TOOL_SEPARATOR
from lmc.mcp.client import McpManager, McpServerError, ServerStatus
from lmc.mcp.config import McpServerConfig
from lmc.messages import Chunk

if TYPE_CHECKING:
    from mcp.types import CallToolResult

__all__ = ["ArgumentsError", "McpTool", "McpTools", "function_name", "result_chunks"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_IMAGE_FORMATS = {
    "image/png": "base64.png",
    "image/jpeg": "base64.jpeg",
    "image/jpg": "base64.jpeg",
}
#: The most schema problems listed to the model at once.
_MAX_PROBLEMS = 5


class ArgumentsError(ValueError):
    """A call's arguments cannot be used; ``str()`` is exactly what the model is told."""


def function_name(server: str, tool: str) -> str:
    """``SERVER__TOOL``, with characters a function name cannot hold made ``_``."""
    return f"{server}{TOOL_SEPARATOR}{_UNSAFE.sub('_', tool)}"


@dataclass(frozen=True, slots=True)
class McpTool:
    """One MCP tool as the model sees it."""

    server: str
    name: str  # as the server names it
    description: str
    input_schema: dict[str, Any]
    auto_approve: bool = False
    validator: Any = field(default=None, compare=False, repr=False)

    @property
    def function(self) -> str:
        return function_name(self.server, self.name)

    @property
    def format(self) -> str:
        return f"{self.server}.{self.function.partition(TOOL_SEPARATOR)[2]}"

    def description_for_model(self) -> ToolDescription:
        parameters = self.input_schema if self.input_schema.get("properties") else None
        return ToolDescription(self.function, self.description, parameters)


def _validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for the tool's schema; None when the schema itself is broken."""
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError:
        return None  # the server validates what lmc cannot
    return cls(schema)


def _where(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else str(p) for p in path]
    return ".".join(parts).replace(".[", "[") if parts else ""


def _problems(validator: Any, arguments: object) -> list[str]:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    lines = []
    for error in errors[:_MAX_PROBLEMS]:
        where = _where(error.absolute_path)
        lines.append(f"{where}: {error.message}" if where else error.message)
    if len(errors) > _MAX_PROBLEMS:
        lines.append(f"and {len(errors) - _MAX_PROBLEMS} more")
    return lines


def _output(text: str) -> Chunk:
    if text and not text.endswith("\n"):
        text += "\n"
    return {"role": "computer", "type": "console", "format": "output", "content": text}


def _image(fmt: str, data: str) -> Chunk:
    return {"role": "computer", "type": "image", "format": fmt, "content": data}


def result_chunks(result: CallToolResult) -> list[Chunk]:
    """A tool's result as computer content chunks (console output and images)."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    chunks: list[Chunk] = []
    if result.is_error:
        chunks.append(_output("The tool reported an error:"))
    for block in result.content:
        if isinstance(block, TextContent):
            chunks.append(_output(block.text))
        elif isinstance(block, ImageContent):
            chunks.append(_image(_IMAGE_FORMATS.get(block.mime_type.lower(), "base64"), block.data))
        elif isinstance(block, AudioContent):
            chunks.append(_output(f"[audio ({block.mime_type}), not shown]"))
        elif isinstance(block, ResourceLink):
            chunks.append(_output(f"[resource {block.name}: {block.uri}]"))
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            chunks.append(_output(text if isinstance(text, str) else f"[binary {resource.uri}]"))
    if not result.content and result.structured_content is not None:
        chunks.append(_output(json.dumps(result.structured_content, ensure_ascii=False)))
    if not chunks:
        chunks.append(_output("(no output)"))
    return chunks


def _failure(message: str) -> list[Chunk]:
    return [_output(message)]


class McpTools:
    """The configured servers' tools, listed once per session (so the prompt stays stable)."""

    def __init__(self, configs: Mapping[str, McpServerConfig]) -> None:
        self.manager = McpManager(configs)
        self._tools: dict[str, McpTool] | None = None
        self._statuses: list[ServerStatus] = []
        self._unsaid: list[str] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        self.manager.start()

    def statuses(self) -> list[ServerStatus]:
        self._listed()
        return list(self._statuses)

    def _listed(self) -> dict[str, McpTool]:
        with self._lock:
            if self._tools is None:
                self._statuses = self.manager.statuses()
                tools: dict[str, McpTool] = {}
                for status in self._statuses:
                    if not status.started:
                        self._unsaid.append(str(status.error))
                        continue
                    missing = status.missing_line()
                    if missing is not None:
                        self._unsaid.append(missing)
                    config = status.config
                    for info in status.tools:
                        tool = McpTool(
                            config.name,
                            info.name,
                            info.description,
                            info.input_schema,
                            info.name in config.auto_approve,
                            _validator(info.input_schema),
                        )
                        tools[tool.function] = tool
                self._tools = tools
            return self._tools

    def descriptions(self) -> list[ToolDescription]:
        return [tool.description_for_model() for tool in self._listed().values()]

    def notices(self) -> list[str]:
        self._listed()
        with self._lock:
            said, self._unsaid = self._unsaid, []
        return said

    def find(self, function: str) -> McpTool | None:
        return self._listed().get(function)

    def arguments(self, tool: McpTool, text: str) -> dict[str, Any]:
        name = f"functions.{tool.function}"
        stripped = text.strip() or "{}"
        try:
            arguments = json.loads(stripped)
        except ValueError as exc:
            raise ArgumentsError(
                f"The arguments to {name} are not valid JSON ({exc}). Send one JSON object."
            ) from None
        if not isinstance(arguments, dict):
            raise ArgumentsError(
                f"The arguments to {name} must be a JSON object, not {type(arguments).__name__}."
            )
        if tool.validator is not None:
            problems = _problems(tool.validator, arguments)
            if problems:
                raise ArgumentsError(
                    f"The arguments to {name} do not match its schema: "
                    + "; ".join(problems)
                    + ". Call it again with arguments that match the schema."
                )
        return arguments

    def call(self, tool: McpTool, arguments: dict[str, Any]) -> list[Chunk]:
        try:
            result = self.manager.call(tool.server, tool.name, arguments)
        except McpServerError as exc:
            return _failure(str(exc))
        return result_chunks(result)

    def cancel(self) -> None:
        self.manager.cancel_calls()

    def close(self) -> None:
        self.manager.close()
