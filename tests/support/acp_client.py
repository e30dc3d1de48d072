"""``lmc acp`` driven by the official Python SDK (``agent-client-protocol``) as its client.

:func:`acp_agent` starts ``python -m lmc acp ARGS`` with the SDK's own ``spawn_agent_process``
(which pipes the agent's stderr and never reads it: the case of an editor that ignores it),
with an observer that checks every message lmc writes against the ACP schema
(:mod:`support.acp_schema`). :class:`RecordingClient` keeps every update and answers the
permission questions from a list, as a person clicking would.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.connection import StreamDirection, StreamEvent
from acp.core import ClientSideConnection
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse
from support.acp_schema import SchemaCheck

__all__ = ["ROOT", "RecordingClient", "acp_agent", "tool_calls", "wait_for"]

ROOT = Path(__file__).resolve().parents[2]
#: Generous: the machines are small and shared; nothing waits this long when all is well.
PATIENCE = 240.0


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Until ``condition()`` holds (polled), at most :data:`PATIENCE` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not condition():
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.05)


class RecordingClient:
    """An ACP client that records updates and answers permission questions from a list."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.answers = list(answers or [])
        self.updates: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []
        self.options: list[list[dict[str, Any]]] = []

    async def request_permission(
        self,
        session_id: str,
        tool_call: Any,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call.model_dump(by_alias=True, exclude_none=True))
        self.options.append([o.model_dump(by_alias=True, exclude_none=True) for o in options])
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=answer, outcome="selected")
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(by_alias=True, exclude_none=True))

    def on_connect(self, conn: Any) -> None:
        pass

    def kinds(self) -> list[str]:
        return [str(u["sessionUpdate"]) for u in self.updates]

    def text(self, kind: str) -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates
            if u["sessionUpdate"] == kind and u["content"]["type"] == "text"
        )


def tool_calls(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each tool call's updates (its tool_call first), by id."""
    calls: dict[str, list[dict[str, Any]]] = {}
    for update in updates:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            calls.setdefault(update["toolCallId"], []).append(update)
    return calls


@asynccontextmanager
async def acp_agent(
    client: RecordingClient, env: dict[str, str], cwd: Path, *args: str
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process, SchemaCheck]]:
    """``lmc acp ARGS`` with the SDK's client connection; ends the process when done."""
    checker = SchemaCheck()

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            checker.agent_sent(event.message)
        else:
            checker.client_sent(event.message)

    full_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    async with spawn_agent_process(
        client,  # type: ignore[arg-type]
        sys.executable,
        "-m",
        "lmc",
        "acp",
        *args,
        env=full_env,
        cwd=cwd,
        observers=[observe],
    ) as (conn, process):
        try:
            yield conn, process, checker
        finally:
            if process.returncode is None and process.stdin is not None:
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), PATIENCE)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise
