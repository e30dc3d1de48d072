"""``lmc mcp serve``: lmc as an MCP server on stdio, so other agents run code in its kernels.

Three tools: ``run_code(language, code)`` runs code in a stateful kernel of that language and
returns its output (text, and images as image content), shortened to its beginning and end
past :data:`OUTPUT_LIMIT` characters as the terminal's model sees it (with a note saying so);
``languages`` says which languages run here (only those that do: no AppleScript off macOS, no
language whose program is missing). A run that failed (the code raised, its kernel could not
start, died or timed out) comes back with ``isError: true`` and its output; a failure of lmc's
own as ``isError: true`` with one line. ``jobs(action, job, wait)`` lists, polls and stops the
runs that went past ``block_timeout`` and were handed back as jobs
(:mod:`lmc.computer.job_calls`).

A stdio server serves exactly one client session, so the session's kernels are the
process's kernels: state is kept between calls of one client and never shared with another.
The :class:`~lmc.computer.Computer` comes from the caller (the CLI builds it the way ``lmc
run`` does, sandbox included) and is created on the first call.

Only ``lmc mcp serve`` imports this module, so it imports the SDK at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from mcp.server.lowlevel import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from lmc.computer.job_calls import JOBS_DESCRIPTION, JOBS_PARAMETERS
from lmc.paths import host_which

if TYPE_CHECKING:
    from collections.abc import Iterable

    from lmc.messages import Chunk

__all__ = ["OUTPUT_LIMIT", "RUN_CODE_DESCRIPTION", "build_server", "serve_stdio"]

#: The most characters of output one call returns (as much as lmc's own model reads).
OUTPUT_LIMIT = 6_000

RUN_CODE_DESCRIPTION = (
    "Run code on this computer in a stateful kernel: variables, imports and the working "
    "directory persist between calls of this session. language is one of the names the "
    "languages tool lists (python, shell, javascript, r, ...). Returns the output; images "
    "come back as images."
)
_MIME = {"base64": "image/png", "base64.png": "image/png", "base64.jpeg": "image/jpeg"}


class _Runs(Protocol):
    def run(self, language: str, code: str) -> Iterable[Chunk]: ...

    def interrupt(self) -> None: ...

    def close(self) -> None: ...


class _Kernels:
    """The session's computer, created on first use; one run at a time."""

    def __init__(self, make: Callable[[], _Runs]) -> None:
        self._make = make
        self._computer: _Runs | None = None
        self._lock = threading.Lock()

    def computer(self) -> _Runs:
        if self._computer is None:
            self._computer = self._make()
        return self._computer

    def run(self, language: str, code: str) -> CallToolResult:
        from lmc.computer.languages import resolve_language
        from lmc.computer.output import bound_output

        resolved = resolve_language(language)
        if resolved is None or resolved.name not in _language_names():
            known = ", ".join(_language_names())
            return _error(f"lmc cannot run {language!r} code here; it runs {known}.")
        try:
            with self._lock:
                computer = self.computer()
                content, output = _collect(computer.run(language, code))
                failed = bool(getattr(computer, "last_run_failed", False))
        except Exception as exc:  # lmc's failure, not the code's: the client must know
            return _error(f"lmc failed to run the code: {_one_line(exc)}")
        text = "".join(output)
        shown = bound_output(text, OUTPUT_LIMIT) if text else "(no output)"
        if len(text) > OUTPUT_LIMIT:
            shown += f"\n[output shortened: {len(text):,} characters in all]\n"
        return CallToolResult(content=[TextContent(text=shown), *content], is_error=failed)

    def jobs(self, arguments: dict[str, Any]) -> CallToolResult:
        from lmc.computer.job_calls import answer_job_call, job_arguments

        try:
            checked = job_arguments(json.dumps(arguments))
        except ValueError as exc:
            return _error(str(exc))
        table = getattr(self._computer, "jobs", None)
        return CallToolResult(content=[TextContent(text=answer_job_call(table, checked))])

    def interrupt(self) -> None:
        if self._computer is not None:
            self._computer.interrupt()

    def close(self) -> None:
        if self._computer is not None:
            self._computer.close()
            self._computer = None


def _one_line(exc: BaseException) -> str:
    return " ".join((str(exc) or type(exc).__name__).split())[:300]


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def _collect(chunks: Iterable[Chunk]) -> tuple[list[Any], list[str]]:
    """A run's images (as image content) and text pieces."""
    content: list[Any] = []
    output: list[str] = []
    for chunk in chunks:
        if "content" not in chunk:
            continue
        if chunk["type"] == "console" and chunk.get("format") == "output":
            output.append(chunk["content"] or "")
        elif chunk["type"] == "image" and chunk["format"] in _MIME:
            content.append(ImageContent(data=chunk["content"], mime_type=_MIME[chunk["format"]]))
        elif chunk["type"] == "image":
            output.append(f"[image saved to {chunk['content']}]\n")
        elif chunk["type"] == "code" and chunk["format"] == "html":
            output.append("[HTML output]\n")
        elif chunk["type"] == "message":
            output.append(chunk["content"] + "\n")
    return content, output


def _language_names() -> list[str]:
    """The languages that run here: AppleScript only on macOS, others when installed."""
    import sys

    from lmc.computer.languages import LANGUAGES

    names = []
    for language in LANGUAGES:
        if language.runner == "applescript" and sys.platform != "darwin":
            continue
        if language.requires is not None and host_which(language.requires) is None:
            continue
        names.append(language.name)
    return names


def _languages_text() -> str:
    return "\n".join(_language_names())


def _tools() -> list[Tool]:
    code = {"type": "string", "description": "The code to run."}
    language = {"type": "string", "enum": _language_names(), "description": "Its language."}
    return [
        Tool(
            name="run_code",
            description=RUN_CODE_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {"language": language, "code": code},
                "required": ["language", "code"],
            },
        ),
        Tool(
            name="jobs",
            description=JOBS_DESCRIPTION,
            input_schema=dict(JOBS_PARAMETERS),
        ),
        Tool(
            name="languages",
            description="The languages run_code runs on this computer, one a line.",
            input_schema={"type": "object", "properties": {}},
        ),
    ]


def build_server(make_computer: Callable[[], _Runs]) -> tuple[Server[Any], _Kernels]:
    """The MCP server and the kernels it runs code in (close them when it ends).

    The SDK's low-level server: it advertises exactly what is implemented (tools, no
    resources, prompts or completions)."""
    from lmc.mcp.client import lmc_version

    kernels = _Kernels(make_computer)

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=_tools())

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        arguments = params.arguments or {}
        if params.name == "languages":
            return CallToolResult(content=[TextContent(text=_languages_text())])
        if params.name == "jobs":
            return await anyio.to_thread.run_sync(kernels.jobs, arguments, abandon_on_cancel=True)
        if params.name != "run_code":
            return _error(f"lmc has no tool {params.name!r}; it has run_code, jobs and languages.")
        language, code = arguments.get("language"), arguments.get("code")
        if not isinstance(language, str) or not isinstance(code, str):
            return _error('run_code needs {"language": "...", "code": "..."}, both strings.')
        try:
            return await anyio.to_thread.run_sync(
                kernels.run, language, code, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            kernels.interrupt()  # the client cancelled the call: stop the code
            raise

    server: Server[Any] = Server(
        "lmc",
        version=lmc_version(),
        instructions="Runs code in lmc's stateful Jupyter kernels on this computer.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server, kernels


def serve_stdio(make_computer: Callable[[], _Runs]) -> None:
    """Serve on stdin/stdout until the client closes the connection."""
    from mcp.server.stdio import stdio_server

    server, kernels = build_server(make_computer)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        kernels.close()
