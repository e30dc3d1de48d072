"""One MCP server's connection, on the manager's anyio event loop.

Each start is one task that opens the transport (a subprocess on stdio, or streamable HTTP),
puts the :mod:`~lmc.mcp.relay` between it and the SDK's :class:`~mcp.ClientSession`,
initializes, lists what the server offers and then holds the connection until it is stopped or
the transport ends, so the SDK's context managers are entered and left in the same task, as
anyio requires. A start is bounded by the server's start timeout: past it the task is
cancelled in the background (the SDK's own bounded shutdown ends the process) and the caller
is answered at once. A connection whose transport ended (a crashed server) is forgotten right
away, so the next call starts the server again. A call past its timeout is cancelled with MCP's
``notifications/cancelled`` by the SDK and the server lives on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import anyio

from lmc.errors import LmcError
from lmc.mcp.config import McpServerConfig
from lmc.mcp.http import HttpSeen
from lmc.mcp.relay import RelayNotes, quiet_sdk_parse_errors, relay
from lmc.mcp.stderr import ServerLog

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import ClientSession
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

__all__ = ["Connection", "McpServerError", "Offer", "PromptInfo", "ResourceInfo", "ToolInfo"]

#: JSON-RPC error codes the SDK uses for a closed connection and a request past its timeout.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
#: A server that paginates forever cannot hang lmc.
_MAX_PAGES = 100

_T = TypeVar("_T")

#: ``progress(done, total, message)``, called on the event loop's thread.
Progress = Callable[[float, float | None, str | None], None]


class McpServerError(LmcError):
    """An MCP server failed to start, crashed, or did not answer in time (one line)."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    task_required: bool = False


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None


@dataclass(frozen=True, slots=True)
class PromptInfo:
    name: str
    description: str = ""
    arguments: tuple[tuple[str, bool], ...] = ()  # (name, required)


@dataclass(frozen=True, slots=True)
class Offer:
    """What a started server offers, and what lmc noticed while listing it."""

    tools: tuple[ToolInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()
    notes: tuple[str, ...] = ()
    server_name: str = ""
    server_version: str = ""


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """One line for an exception out of the SDK or the transport."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = exc.exceptions
        return describe(leaves[0]) if leaves else type(exc).__name__
    text = str(exc) or type(exc).__name__
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        text = message
    return one_line(text)


@dataclass
class _Attempt:
    """One start of the server: set ``ready`` once it serves or failed, ``stop`` to end it."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    session: ClientSession | None = None
    error: str | None = None
    notes: RelayNotes = field(default_factory=RelayNotes)
    log: ServerLog | None = None
    http: HttpSeen = field(default_factory=HttpSeen)
    done: anyio.Event = field(default_factory=anyio.Event)


@dataclass(frozen=True, slots=True)
class Hooks:
    """What every connection shares: who lmc is, the roots, and how HTTP is reached."""

    client_version: str
    roots: tuple[Path, ...] = ()
    http: (
        Callable[[McpServerConfig, HttpSeen], contextlib.AbstractAsyncContextManager[Any]] | None
    ) = None


class Connection:
    """One configured server; only touched on the manager's event loop."""

    def __init__(self, config: McpServerConfig, hooks: Hooks, group: TaskGroup) -> None:
        self.config = config
        self.hooks = hooks
        self._group = group
        self._attempt: _Attempt | None = None
        self.offer = Offer()
        self.error: str | None = None
        self.restarts = 0

    def _line(self, what: str) -> str:
        return f"MCP server {self.config.name!r} {what}"

    @property
    def notes(self) -> RelayNotes | None:
        return self._attempt.notes if self._attempt is not None else None

    # -- starting --------------------------------------------------------------------------

    async def session(self) -> ClientSession:
        """The live session, starting the server if it is not running; raises
        :class:`McpServerError` (one line) when it does not start within its timeout."""
        attempt = self._attempt
        if attempt is None or attempt.done.is_set() or attempt.notes.ended.is_set():
            if attempt is not None:
                self.restarts += 1
                attempt.stop.set()
                if attempt.log is not None and attempt.done.is_set():
                    attempt.log.close()
            attempt = self._attempt = _Attempt()
            self._group.start_soon(self._connect, attempt)
        with anyio.move_on_after(self.config.start_within):
            await attempt.ready.wait()
        if not attempt.ready.is_set():
            attempt.scope.cancel()  # ends in the background; the caller is answered now
            self.error = f"did not start within {self.config.start_within:g} s"
            raise McpServerError(self._line(self.error))
        if attempt.session is None:
            self.error = attempt.error or "stopped right after it started"
            raise McpServerError(self._line(self.error))
        return attempt.session

    async def _connect(self, attempt: _Attempt) -> None:
        try:
            with attempt.scope:
                await self._serve(attempt)
        except Exception as exc:  # any failure of the server or transport, reported once
            detail = describe(exc)
            said = attempt.log.cause() if attempt.log is not None else ""
            if said and said not in detail:
                detail += f" (its last message: {said})"
            detail += _auth_hint(self.config, attempt.http)
            attempt.error = (
                f"failed to start: {detail}" if not attempt.ready.is_set() else f"stopped: {detail}"
            )
        finally:
            attempt.session = None
            if not attempt.ready.is_set() and attempt.error is None:
                attempt.error = "was stopped while starting"
            attempt.ready.set()
            attempt.done.set()

    async def _serve(self, attempt: _Attempt) -> None:
        from mcp import ClientSession
        from mcp.shared.message import SessionMessage
        from mcp.types import Implementation

        async with contextlib.AsyncExitStack() as stack:
            if self.config.command is not None:
                attempt.log = ServerLog()  # kept until the next start: it explains failures
            read, write = await stack.enter_async_context(self._transport(attempt))
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)  # the relay ends before the transport
            sink, source = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            group.start_soon(relay, read, sink, attempt.notes)
            session = await stack.enter_async_context(
                ClientSession(
                    source,
                    write,
                    client_info=Implementation(name="lmc", version=self.hooks.client_version),
                    list_roots_callback=self._roots if self.hooks.roots else None,
                )
            )
            result = await session.initialize()
            offer = await _list_offer(session, self.config, attempt.notes)
            info = result.server_info
            self.offer = Offer(*offer[:4], server_name=info.name, server_version=info.version)
            attempt.session, self.error = session, None
            attempt.ready.set()
            async with anyio.create_task_group() as waiters:

                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    waiters.cancel_scope.cancel()

                waiters.start_soon(until, attempt.stop)
                waiters.start_soon(until, attempt.notes.ended)
            attempt.session = None

    def _transport(self, attempt: _Attempt) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            quiet_sdk_parse_errors()
            assert attempt.log is not None
            from lmc.paths import neutral_dir

            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                # Not the working directory: npx there runs a node_modules the code planted.
                cwd=config.cwd if config.cwd is not None else str(neutral_dir()),
            )
            return stdio_client(params, errlog=cast("TextIO", attempt.log.file))
        if self.hooks.http is None:
            raise McpServerError(self._line("has a url but lmc was built without HTTP"))
        return self.hooks.http(config, attempt.http)

    async def _roots(self, context: Any) -> Any:
        from mcp.types import ListRootsResult, Root

        del context
        roots = [Root(uri=root.resolve().as_uri(), name=root.name) for root in self.hooks.roots]  # type: ignore[arg-type]
        return ListRootsResult(roots=roots)

    # -- stopping --------------------------------------------------------------------------

    async def stop(self, wait: float) -> None:
        """End the connection (the SDK closes stdin, then ends the process), waiting at most
        ``wait`` seconds before cancelling it."""
        attempt = self._attempt
        if attempt is None:
            return
        attempt.stop.set()
        with anyio.move_on_after(wait):
            await attempt.done.wait()
        if not attempt.done.is_set():
            attempt.scope.cancel()
            with anyio.move_on_after(wait):
                await attempt.done.wait()
        if attempt.log is not None and attempt.done.is_set():
            attempt.log.close()

    # -- using -----------------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], report: Progress | None = None
    ) -> CallToolResult:
        """Call a tool; the SDK cancels it with MCP's cancellation past the timeout."""
        from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult

        session = await self.session()
        request = CallToolRequest(params=CallToolRequestParams(name=tool, arguments=arguments))

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(progress, total, message)

        return await self._request(
            tool,
            self.config.timeout + 5,  # the SDK's own limit comes first, with MCP's cancel
            session.send_request(
                request,
                CallToolResult,
                request_read_timeout_seconds=self.config.timeout,
                progress_callback=on_progress if report is not None else None,
            ),
        )

    async def read_resource(self, uri: str) -> ReadResourceResult:
        session = await self.session()
        return await self._request(uri, self.config.timeout, session.read_resource(uri))

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> GetPromptResult:
        session = await self.session()
        return await self._request(name, self.config.timeout, session.get_prompt(name, arguments))

    async def _request(self, what: str, limit: float, request: Awaitable[_T]) -> _T:
        """Await ``request`` at most ``limit`` seconds (a cancelled request is cancelled on the
        server too: the SDK sends ``notifications/cancelled``); failures as one line."""
        from mcp import MCPError

        try:
            with anyio.fail_after(limit):
                return await request
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise McpServerError(
                    self._line(
                        f"did not answer {what} within {self.config.timeout:g} s: the call was "
                        "cancelled (the server goes on)"
                    )
                ) from None
            if exc.code == CONNECTION_CLOSED:
                detail = exc.message
                attempt = self._attempt
                said = attempt.log.cause() if attempt is not None and attempt.log else ""
                if said:
                    detail += f"; its last message: {said}"
                raise McpServerError(
                    self._line(f"stopped during the call ({detail}): it restarts on next use")
                ) from None
            raise McpServerError(self._line(f"refused the call: {exc.message}")) from None
        except TimeoutError:
            raise McpServerError(
                self._line(f"did not answer {what} within {self.config.timeout:g} s")
            ) from None
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            raise McpServerError(self._line(f"failed during the call ({describe(exc)})")) from None


def _auth_hint(config: McpServerConfig, seen: HttpSeen) -> str:
    """A hint when an HTTP server answered 401: it wants OAuth (or a token in headers)."""
    if not seen.unauthorized:
        return ""
    if config.oauth:
        return f" (HTTP 401: the sign-in was refused; run `lmc mcp login {config.name}` again)"
    oauth = "OAuth" if "resource_metadata" in seen.challenge else "authorization"
    return (
        f" (HTTP 401: the server asks for {oauth}: set oauth = true in its table and run "
        f"`lmc mcp login {config.name}`, or give a token in headers)"
    )


async def _pages(list_page: Callable[[Any], Awaitable[Any]], key: str) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    items: list[Any] = []
    cursor: str | None = None
    for _page in range(_MAX_PAGES):
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        result = await list_page(params)
        items.extend(getattr(result, key))
        cursor = result.next_cursor
        if cursor is None:
            break
    return items


async def _list_offer(
    session: ClientSession, config: McpServerConfig, notes: RelayNotes
) -> tuple[tuple[ToolInfo, ...], tuple[ResourceInfo, ...], tuple[PromptInfo, ...], tuple[str, ...]]:
    """The server's tools (after the allow-list), resources and prompts, and notes."""
    capabilities = session.server_capabilities
    tools: list[ToolInfo] = []
    if capabilities is None or capabilities.tools is not None:
        for tool in await _pages(lambda p: session.list_tools(params=p), "tools"):
            execution = tool.execution
            required = execution is not None and execution.task_support == "required"
            schema = dict(tool.input_schema)
            tools.append(ToolInfo(tool.name, tool.description or "", schema, required))
    resources: list[ResourceInfo] = []
    if capabilities is not None and capabilities.resources is not None:
        for res in await _pages(lambda p: session.list_resources(params=p), "resources"):
            info = ResourceInfo(str(res.uri), res.name, res.description or "", res.mime_type)
            resources.append(info)
    prompts: list[PromptInfo] = []
    if capabilities is not None and capabilities.prompts is not None:
        for prompt in await _pages(lambda p: session.list_prompts(params=p), "prompts"):
            arguments = tuple((a.name, bool(a.required)) for a in prompt.arguments or ())
            prompts.append(PromptInfo(prompt.name, prompt.description or "", arguments))
    offered = {tool.name for tool in tools}
    named = [*(config.tools or ()), *config.auto_approve]
    missing = tuple(dict.fromkeys(name for name in named if name not in offered))
    result_notes = [f"MCP server {config.name!r}: {note}" for note in notes.left_out]
    if missing:
        result_notes.append(
            f"MCP server {config.name!r} has no tool {', '.join(repr(n) for n in missing)} "
            "(named in its tools or auto_approve)"
        )
    if config.tools is not None:
        tools = [tool for tool in tools if tool.name in config.tools]
    return tuple(tools), tuple(resources), tuple(prompts), tuple(result_notes)
