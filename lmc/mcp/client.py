"""MCP clients for a synchronous agent: servers on a private asyncio loop in its own thread.

The agent loop is synchronous and the MCP SDK is async (anyio), so :class:`McpManager` runs
one event loop in a daemon thread. Each server is one long-lived task on it that opens the
transport (a subprocess on stdio, or streamable HTTP), initializes the session, lists the
tools and then holds the connection open until it is stopped, so the SDK's context managers
are entered and left in the same task, as anyio requires.

Servers start lazily (``start()``), all at once, and each start is bounded by the server's
``timeout``. A server that fails to start, crashes or stops answering is reported in one line
(:class:`McpServerError`, ``str()`` is that line), stopped, and started again on its next use;
lmc never waits on it longer than its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from lmc.errors import LmcError
from lmc.mcp.config import McpServerConfig

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult

__all__ = ["McpManager", "McpServerError", "ServerStatus", "ToolInfo"]

#: The most a stop waits for a server to exit (the SDK kills it after its own grace period).
_STOP_WAIT = 10.0


class McpServerError(LmcError):
    """An MCP server failed to start, crashed, or did not answer in time (one line)."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Whether a server started, and its tools (after the allow-list) or why it did not."""

    config: McpServerConfig
    started: bool
    tools: tuple[ToolInfo, ...] = ()
    error: str | None = None
    #: Tools named in ``tools`` or ``auto_approve`` that the server does not offer (typos).
    missing: tuple[str, ...] = ()

    def missing_line(self) -> str | None:
        if not self.missing:
            return None
        names = ", ".join(repr(name) for name in self.missing)
        return (
            f"MCP server {self.config.name!r} has no tool {names} (named in its tools or "
            "auto_approve)"
        )


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _describe(exc: BaseException) -> str:
    """One line for an exception out of the SDK or the transport."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = exc.exceptions
        return _describe(leaves[0]) if leaves else type(exc).__name__
    text = str(exc) or type(exc).__name__
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        text = message
    return _one_line(text)


class _Server:
    """One configured server and its connection task (only touched on the manager's loop)."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.session: ClientSession | None = None
        self.tools: tuple[ToolInfo, ...] = ()
        self.missing: tuple[str, ...] = ()
        self.error: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._errlog: IO[str] | None = None

    # -- starting --------------------------------------------------------------------------

    def begin(self) -> asyncio.Future[None]:
        """Start the connection task unless it runs; the future is done once it is ready."""
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            self._stop = asyncio.Event()
            self._task = loop.create_task(self._connect(self._ready, self._stop))
            # A failure nobody waits for any more (a start that timed out) is not an error.
            self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        assert self._ready is not None
        return self._ready

    async def started(self) -> ClientSession:
        """The session, starting the server if needed; raises :class:`McpServerError`."""
        ready = self.begin()
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.start_within)
        except TimeoutError:
            await self.stop()
            self.error = f"did not start within {self.config.start_within:g} s"
            raise McpServerError(self._line(self.error)) from None
        except McpServerError:
            raise
        if self.session is None:  # it stopped right after starting
            raise McpServerError(self._line("stopped right after it started"))
        return self.session

    def _line(self, what: str) -> str:
        return f"MCP server {self.config.name!r} {what}"

    async def _connect(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.tools = await self._list_tools(session)
                self.session, self.error = session, None
                ready.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(McpServerError(self._line("was stopped while starting")))
        except Exception as exc:  # any failure of the server or transport, reported once
            detail = _describe(exc)
            stderr = self._last_stderr_line()
            if stderr and stderr not in detail:
                detail += f" (its last message: {stderr})"
            if not ready.done():
                self.error = f"failed to start: {detail}"
                ready.set_exception(McpServerError(self._line(self.error)))
            else:
                self.error = f"stopped: {detail}"
        finally:
            self.session = None
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # The server's stderr goes to a file: it must not draw over the terminal, and its
            # last line explains a failed start.
            self._errlog = tempfile.TemporaryFile(  # noqa: SIM115 - closed when the task ends
                "w+", encoding="utf-8", errors="replace"
            )
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            return stdio_client(params, errlog=self._errlog)
        return _http_transport(str(config.url), dict(config.headers))

    def _last_stderr_line(self) -> str:
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            log.seek(0)
            lines = [line.strip() for line in log.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return _one_line(lines[-1], 200) if lines else ""

    async def _list_tools(self, session: ClientSession) -> tuple[ToolInfo, ...]:
        from mcp.types import PaginatedRequestParams

        tools: list[ToolInfo] = []
        cursor: str | None = None
        for _page in range(100):  # a server that paginates forever cannot hang lmc
            params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
            result = await session.list_tools(params=params)
            for tool in result.tools:
                tools.append(ToolInfo(tool.name, tool.description or "", dict(tool.input_schema)))
            cursor = result.next_cursor
            if cursor is None:
                break
        offered = {tool.name for tool in tools}
        named = [*(self.config.tools or ()), *self.config.auto_approve]
        self.missing = tuple(dict.fromkeys(name for name in named if name not in offered))
        allowed = self.config.tools
        if allowed is not None:
            tools = [tool for tool in tools if tool.name in allowed]
        return tuple(tools)

    # -- stopping --------------------------------------------------------------------------

    async def stop(self) -> None:
        """End the connection (the SDK closes stdin, then terminates the process)."""
        task = self._task
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=_STOP_WAIT)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=_STOP_WAIT)
        self._task = None
        self.session = None

    # -- calling ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        from mcp import MCPError

        session = await self.started()
        try:
            return await asyncio.wait_for(session.call_tool(tool, arguments), self.config.timeout)
        except TimeoutError:
            await self.stop()
            raise McpServerError(
                self._line(
                    f"did not answer {tool} within {self.config.timeout:g} s: it was stopped "
                    "and restarts on next use"
                )
            ) from None
        except MCPError as exc:
            if self.session is not session or exc.code == _CONNECTION_CLOSED:
                detail = exc.message
                stderr = self._last_stderr_line()
                if stderr:
                    detail += f"; its last message: {stderr}"
                await self.stop()
                raise McpServerError(
                    self._line(f"stopped during the call ({detail}): it restarts on next use")
                ) from None
            raise McpServerError(self._line(f"refused the call: {exc.message}")) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.stop()
            raise McpServerError(
                self._line(f"failed during the call ({_describe(exc)}): it restarts on next use")
            ) from None


_CONNECTION_CLOSED = -32000


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers or None) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


class McpManager:
    """The configured servers, driven from synchronous code (the agent loop, the CLI)."""

    def __init__(self, configs: Mapping[str, McpServerConfig]) -> None:
        self.configs = dict(configs)
        self._servers = {name: _Server(config) for name, config in self.configs.items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._starting: dict[str, Future[None]] = {}
        self._calls: set[Future[Any]] = set()

    # -- the loop thread ---------------------------------------------------------------------

    def _run(self, coro: Any) -> Future[Any]:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="lmc-mcp", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coro, loop)

    # -- starting and listing ----------------------------------------------------------------

    def start(self) -> None:
        """Start every server in the background (returns at once; idempotent)."""
        for name, server in self._servers.items():
            if name not in self._starting:
                self._starting[name] = self._run(self._start_one(server))

    async def _start_one(self, server: _Server) -> None:
        await server.started()

    def statuses(self) -> list[ServerStatus]:
        """Wait for each server's start (bounded by its timeout) and say how it went."""
        self.start()
        statuses = []
        for name, server in self._servers.items():
            future = self._starting[name]
            try:
                future.result(timeout=server.config.start_within + _STOP_WAIT)
            except McpServerError as exc:
                statuses.append(ServerStatus(server.config, False, error=str(exc)))
                continue
            except FutureTimeout:
                future.cancel()
                line = f"MCP server {name!r} did not start within {server.config.start_within:g} s"
                statuses.append(ServerStatus(server.config, False, error=line))
                continue
            except Exception as exc:  # a bug in the SDK or here: still one line, not a crash
                line = f"MCP server {name!r} failed to start: {_describe(exc)}"
                statuses.append(ServerStatus(server.config, False, error=line))
                continue
            statuses.append(ServerStatus(server.config, True, server.tools, None, server.missing))
        return statuses

    # -- calling -----------------------------------------------------------------------------

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call a tool and wait for its result; raises :class:`McpServerError` (one line).

        A ``KeyboardInterrupt`` while waiting cancels the call (the SDK tells the server) and
        goes on; :meth:`cancel_calls` from another thread ends the wait with an
        :class:`McpServerError` saying the call was cancelled.
        """
        target = self._servers[server]
        future: Future[CallToolResult] = self._run(target.call(tool, arguments))
        with self._lock:
            self._calls.add(future)
        try:
            return future.result()  # a lock wait: Ctrl-C interrupts it
        except CancelledError:
            raise McpServerError(f"the call to {server}.{tool} was cancelled") from None
        except BaseException:
            future.cancel()
            raise
        finally:
            with self._lock:
                self._calls.discard(future)

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
        """Stop every server and the loop thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        servers = list(self._servers.values())

        async def stop_all() -> None:
            await asyncio.gather(*(server.stop() for server in servers), return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(timeout=3 * _STOP_WAIT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_STOP_WAIT)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
        self._starting.clear()

    def __enter__(self) -> McpManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
