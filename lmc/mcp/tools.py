"""MCP servers' tools as the agent's external tools (:class:`lmc.agent.tool_calls.ExternalTools`).

Each tool is offered as the Harmony function ``functions.SERVER__TOOL`` (two underscores, as
Codex names MCP tools) with its description and input schema. Arguments are checked against
that schema with jsonschema before the call, so the model is told exactly which field is wrong
and what it expects. What cannot be offered is left out with one line each: a tool that needs
MCP tasks (lmc does not run them), a second tool whose name sanitises to one already taken, a
server whose tools do not fit the budget (:data:`MAX_TOOLS`, :data:`MAX_SIGNATURE_CHARS`).
"""

from __future__ import annotations

import json
import queue
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lmc.harmony.conversation import ToolDescription
from lmc.harmony.schema_ts import schema_to_typescript
from lmc.harmony.to_lmc import TOOL_SEPARATOR
from lmc.mcp.client import McpManager, McpServerError, ServerStatus
from lmc.mcp.config import McpServerConfig
from lmc.mcp.results import argument_problems, output, progress_chunk, result_chunks
from lmc.messages import Chunk

__all__ = [
    "MAX_SIGNATURE_CHARS",
    "MAX_TOOLS",
    "ArgumentsError",
    "McpTool",
    "McpTools",
    "function_name",
    "result_chunks",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: At most this many MCP tools are offered at once (the prompt carries every signature).
MAX_TOOLS: Final = 128
#: At most this many characters of MCP tool descriptions and signatures (~20k tokens).
MAX_SIGNATURE_CHARS: Final = 80_000


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

    def size(self) -> int:
        """Characters this tool costs in the prompt (about)."""
        schema = schema_to_typescript(self.input_schema) if self.input_schema else ""
        return len(self.function) + len(self.description) + len(schema)


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


@dataclass
class _Budget:
    tools: int = MAX_TOOLS
    chars: int = MAX_SIGNATURE_CHARS

    def take(self, tools: Sequence[McpTool]) -> bool:
        size = sum(tool.size() for tool in tools)
        if len(tools) > self.tools or size > self.chars:
            return False
        self.tools -= len(tools)
        self.chars -= size
        return True


class McpTools:
    """The configured servers' tools, listed once per session (so the prompt stays stable)."""

    def __init__(
        self,
        configs: Mapping[str, McpServerConfig],
        *,
        roots: Sequence[Path] = (),
        verbose: bool = False,
        max_tools: int = MAX_TOOLS,
        max_chars: int = MAX_SIGNATURE_CHARS,
    ) -> None:
        self.manager = McpManager(configs, roots)
        self.verbose = verbose
        self._budget = (max_tools, max_chars)
        self._tools: dict[str, McpTool] | None = None
        self._statuses: list[ServerStatus] = []
        self._unsaid: list[str] = []
        self._noted_stdout: set[str] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        self.manager.start()

    def statuses(self) -> list[ServerStatus]:
        self._listed()
        return list(self._statuses)

    def _server_tools(self, status: ServerStatus, taken: dict[str, McpTool]) -> list[McpTool]:
        config = status.config
        tools: list[McpTool] = []
        names: dict[str, str] = {}
        for info in status.tools:
            if info.name in config.disabled_tools:
                continue
            if info.task_required:
                self._unsaid.append(
                    f"MCP server {config.name!r}: tool {info.name!r} left out (it runs only as "
                    "an MCP task, which lmc does not support)"
                )
                continue
            function = function_name(config.name, info.name)
            if function in taken or function in names:
                other = names.get(function) or taken[function].name
                self._unsaid.append(
                    f"MCP server {config.name!r}: tools {other!r} and {info.name!r} both become "
                    f"functions.{function}; {info.name!r} left out"
                )
                continue
            names[function] = info.name
            validator = _validator(info.input_schema)
            auto = info.name in config.auto_approve
            tools.append(
                McpTool(
                    config.name, info.name, info.description, info.input_schema, auto, validator
                )
            )
        return tools

    def _listed(self) -> dict[str, McpTool]:
        with self._lock:
            if self._tools is None:
                self._statuses = self.manager.statuses()
                tools: dict[str, McpTool] = {}
                budget = _Budget(*self._budget)
                for status in self._statuses:
                    if not status.started:
                        self._unsaid.append(str(status.error))
                        continue
                    self._unsaid.extend(status.notes)
                    offered = self._server_tools(status, tools)
                    if not budget.take(offered):
                        self._unsaid.append(_over_budget(status.config.name, offered, budget))
                        continue
                    tools.update((tool.function, tool) for tool in offered)
                self._tools = tools
            return self._tools

    def descriptions(self) -> list[ToolDescription]:
        return [tool.description_for_model() for tool in self._listed().values()]

    def notices(self) -> list[str]:
        self._listed()
        with self._lock:
            said, self._unsaid = self._unsaid, []
        return said + self._stdout_notes()

    def _stdout_notes(self) -> list[str]:
        """Once per server, with --verbose: it writes lines on stdout that are not MCP."""
        if not self.verbose:
            return []
        notes = []
        for status in self._statuses:
            name = status.config.name
            if name in self._noted_stdout or not status.started:
                continue
            count, first = self.manager.not_protocol_lines(name)
            if count:
                self._noted_stdout.add(name)
                notes.append(
                    f"MCP server {name!r} writes lines that are not MCP on its stdout; lmc "
                    f"ignores them (first: {first!r})"
                )
        return notes

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
            problems = argument_problems(tool.validator, arguments)
            if problems:
                raise ArgumentsError(
                    f"The arguments to {name} do not match its schema: "
                    + "; ".join(problems)
                    + ". Call it again with arguments that match the schema."
                )
        return arguments

    def stream(self, tool: McpTool, arguments: dict[str, Any]) -> Iterator[Chunk]:
        """Call it, yielding a progress chunk for each progress notification as it comes,
        then the result's chunks (or the failure as one output line)."""
        updates: queue.SimpleQueue[Chunk | None] = queue.SimpleQueue()
        outcome: list[list[Chunk]] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(self.call(tool, arguments, updates.put))
            except BaseException as exc:  # handed to the caller's thread below
                failure.append(exc)
            finally:
                updates.put(None)

        worker = threading.Thread(target=run, name=f"lmc-mcp-call-{tool.function}", daemon=True)
        worker.start()
        try:
            while (update := updates.get()) is not None:
                yield update
        finally:
            if worker.is_alive():  # the consumer stopped early (Ctrl-C): cancel the call
                self.manager.cancel_calls()
            worker.join()
        if failure:
            raise failure[0]
        yield from outcome[0]

    def call(
        self, tool: McpTool, arguments: dict[str, Any], on_progress: Any = None
    ) -> list[Chunk]:
        def progress(done: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(progress_chunk(done, total, message))

        try:
            result = self.manager.call(tool.server, tool.name, arguments, progress)
        except McpServerError as exc:
            return [output(str(exc))]
        return result_chunks(result)

    def cancel(self) -> None:
        self.manager.cancel_calls()

    def close(self) -> None:
        self.manager.close()


def _over_budget(server: str, tools: Sequence[McpTool], budget: _Budget) -> str:
    size = sum(tool.size() for tool in tools)
    return (
        f"MCP server {server!r} left out: its {len(tools)} tools ({size:,} characters) do not "
        f"fit what is left of the budget ({budget.tools} tools, {budget.chars:,} characters); "
        "keep fewer with its tools = [...] or choose servers with --mcp NAME"
    )
