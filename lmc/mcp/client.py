"""MCP clients for a synchronous agent: the servers on one anyio event loop behind a portal.

The agent loop is synchronous and the MCP SDK is async (anyio), so :class:`McpManager` opens
one :func:`anyio.from_thread.start_blocking_portal` (an event loop in a thread anyio manages)
and a task group in it; each server is a :class:`~lmc.mcp.connection.Connection` whose
connection task lives in that group. Every wait from the synchronous side is bounded: a start
by the server's start timeout, a call by its timeout (the SDK cancels it on the server with
MCP's cancellation), a stop by :data:`STOP_WAIT`. Failures come back as one line
(:class:`McpServerError`); an error lmc does not expect is reported the same way, never
swallowed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lmc.mcp.config import McpServerConfig
from lmc.mcp.connection import (
    Connection,
    Hooks,
    McpServerError,
    PromptInfo,
    ResourceInfo,
    ToolInfo,
    describe,
)

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.from_thread import BlockingPortal
    from mcp.types import CallToolResult, GetPromptResult, ReadResourceResult

    from lmc.mcp.http import HttpSeen

__all__ = [
    "STOP_WAIT",
    "McpManager",
    "McpServerError",
    "PromptInfo",
    "ResourceInfo",
    "ServerStatus",
    "ToolInfo",
    "lmc_version",
]

#: The most a stop waits for a server to exit before cancelling it.
STOP_WAIT = 10.0
#: Slack beyond a server's own limits before the synchronous side gives up on the loop.
_SLACK = 15.0

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Whether a server started; what it offers (tools after the allow-list) or why not."""

    config: McpServerConfig
    started: bool
    tools: tuple[ToolInfo, ...] = ()
    error: str | None = None
    #: One-line notes: tools left out, names in ``tools``/``auto_approve`` it lacks.
    notes: tuple[str, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()
    server_version: str = ""


def lmc_version() -> str:
    """lmc's version, from its installed metadata (importing ``lmc`` itself would make the
    mcp layer depend on the top of the package)."""
    from importlib.metadata import PackageNotFoundError, version

    from lmc.extras import DISTRIBUTION

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def _http_transport(
    config: McpServerConfig, seen: HttpSeen
) -> contextlib.AbstractAsyncContextManager[Any]:
    from lmc.mcp.http import http_transport

    return http_transport(config, seen)


@contextlib.asynccontextmanager
async def _task_group() -> AsyncIterator[TaskGroup]:
    """The connections' task group, created on the portal's loop (anyio needs one running)."""
    import anyio

    async with anyio.create_task_group() as group:
        try:
            yield group
        finally:
            group.cancel_scope.cancel()  # what a bounded stop left running


class McpManager:
    """The configured servers, driven from synchronous code (the agent loop, the CLI)."""

    def __init__(
        self,
        configs: Mapping[str, McpServerConfig],
        roots: Sequence[Path] = (),
    ) -> None:
        self.configs = {name: c for name, c in configs.items() if c.enabled}
        self._hooks = Hooks(lmc_version(), tuple(roots), _http_transport)
        self._stack: contextlib.ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._group: TaskGroup | None = None
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()
        self._starting: dict[str, Future[Any]] = {}
        self._calls: set[Future[Any]] = set()

    # -- the event loop --------------------------------------------------------------------

    def _open(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                from anyio.from_thread import start_blocking_portal

                stack = contextlib.ExitStack()
                portal = stack.enter_context(start_blocking_portal())
                try:
                    group: TaskGroup = stack.enter_context(
                        portal.wrap_async_context_manager(_task_group())
                    )
                except BaseException:
                    stack.close()
                    raise
                self._connections = {
                    name: Connection(config, self._hooks, group)
                    for name, config in self.configs.items()
                }
                self._stack, self._portal, self._group = stack, portal, group
            return self._portal

    def _connection(self, name: str) -> Connection:
        self._open()
        try:
            return self._connections[name]
        except KeyError:
            raise McpServerError(f"no MCP server named {name!r}") from None

    def _wait(self, future: Future[_T], seconds: float, what: str, *, call: bool = True) -> _T:
        """The future's result within ``seconds``; an unexpected error as one line. A ``call``
        counts as in flight (and :meth:`cancel_calls` cancels it); a start does not."""
        if call:
            with self._lock:
                self._calls.add(future)
        try:
            return future.result(timeout=seconds)  # a lock wait: Ctrl-C interrupts it
        except CancelledError:
            raise McpServerError(f"the call to {what} was cancelled") from None
        except FutureTimeout:
            future.cancel()
            raise McpServerError(f"{what} did not come back within {seconds:g} s") from None
        except McpServerError:
            raise
        except Exception as exc:
            raise McpServerError(f"{what} failed: {describe(exc)}") from exc
        except BaseException:
            future.cancel()
            raise
        finally:
            with self._lock:
                self._calls.discard(future)

    # -- starting and listing --------------------------------------------------------------

    def start(self) -> None:
        """Start every server in the background (returns at once; idempotent)."""
        portal = self._open()
        for name, connection in self._connections.items():
            if name not in self._starting:
                self._starting[name] = portal.start_task_soon(connection.session)

    def statuses(self) -> list[ServerStatus]:
        """Wait for each server's start (bounded by its start timeout) and say how it went."""
        self.start()
        statuses = []
        for name, connection in self._connections.items():
            config = connection.config
            try:
                limit = config.start_within + _SLACK
                self._wait(self._starting[name], limit, f"MCP server {name!r}", call=False)
            except McpServerError as exc:
                statuses.append(ServerStatus(config, False, error=str(exc)))
                continue
            offer = connection.offer
            statuses.append(
                ServerStatus(
                    config,
                    True,
                    offer.tools,
                    None,
                    offer.notes,
                    offer.resources,
                    offer.prompts,
                    offer.server_version,
                )
            )
        return statuses

    def not_protocol_lines(self, server: str) -> tuple[int, str]:
        """How many stdout lines of ``server`` were not MCP, and the first of them."""
        notes = self._connection(server).notes
        return (notes.not_protocol, notes.first_line) if notes is not None else (0, "")

    # -- calling ---------------------------------------------------------------------------

    def call(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> CallToolResult:
        """Call a tool and wait for its result; raises :class:`McpServerError` (one line).

        ``progress`` is called (on the event loop's thread) for each progress notification.
        A ``KeyboardInterrupt`` while waiting cancels the call (the SDK tells the server) and
        goes on; :meth:`cancel_calls` from another thread ends the wait with an
        :class:`McpServerError` saying the call was cancelled.
        """
        connection = self._connection(server)
        future: Future[CallToolResult] = self._open().start_task_soon(
            connection.call, tool, arguments, progress
        )
        limit = connection.config.start_within + connection.config.timeout + _SLACK
        return self._wait(future, limit, f"{server}.{tool}")

    def read_resource(self, server: str, uri: str) -> ReadResourceResult:
        connection = self._connection(server)
        future: Future[ReadResourceResult]
        future = self._open().start_task_soon(connection.read_resource, uri)
        limit = connection.config.start_within + connection.config.timeout + _SLACK
        return self._wait(future, limit, f"{server} resource {uri}")

    def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> GetPromptResult:
        connection = self._connection(server)
        future: Future[GetPromptResult]
        future = self._open().start_task_soon(connection.get_prompt, name, arguments)
        limit = connection.config.start_within + connection.config.timeout + _SLACK
        return self._wait(future, limit, f"{server} prompt {name}")

    @property
    def calls_in_flight(self) -> int:
        with self._lock:
            return len(self._calls)

    def cancel_calls(self) -> None:
        """Cancel the calls in progress (safe from any thread)."""
        with self._lock:
            calls = list(self._calls)
        for future in calls:
            future.cancel()

    def close(self) -> None:
        """Stop every server, then the event loop (each wait bounded)."""
        with self._lock:
            stack, portal = self._stack, self._portal
            self._stack = self._portal = self._group = None
        if stack is None or portal is None:
            return
        connections = list(self._connections.values())

        async def stop_all() -> None:
            import anyio

            async with anyio.create_task_group() as group:
                for connection in connections:
                    group.start_soon(connection.stop, STOP_WAIT)

        try:
            portal.start_task_soon(stop_all).result(timeout=2 * STOP_WAIT + _SLACK)
        except FutureTimeout:  # the task group's exit below cancels what is left
            logging.getLogger("lmc.mcp").warning("MCP servers did not stop in time; cancelled")
        finally:
            stack.close()
            self._starting.clear()

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
