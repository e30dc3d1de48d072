"""Calls to tools that are not code: MCP tools, offered as ``functions.SERVER__TOOL``.

The loop hands a call here when its recipient names no language (see
:func:`lmc.harmony.to_lmc.tool_call_format` for how ``functions.SERVER__TOOL`` shows). It
goes as a code block does: the arguments are checked, a confirmation chunk ``{"type":
"tool_call", "format": "SERVER.TOOL", "content": ARGUMENTS_JSON}`` is yielded and the same
``decide`` callable is asked (True, False, or edited arguments), then the result comes back
as computer chunks: console output, images. An unknown tool is told to the model with every
tool there is. The agent knows tools only through :class:`ExternalTools`;
:mod:`lmc.mcp.tools` implements it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

from lmc.agent.approvals import Answer, Decision
from lmc.agent.run_output import PendingCall, RunOutput
from lmc.agent.tools import ToolCallError, ToolTarget, resolve_call, tool_names
from lmc.harmony.conversation import ToolDescription
from lmc.messages import Block, Chunk, console_end, console_output, console_start

if TYPE_CHECKING:
    from lmc.agent.history import Transcript

__all__ = ["TOOL_DECLINED", "CallHost", "ExternalTool", "ExternalTools", "run_tool_call"]

#: What the model is told when the person declines a tool call.
TOOL_DECLINED: Final = "The user declined this tool call."


class ExternalTool(Protocol):
    """One tool the model may call as ``functions.{function}``."""

    @property
    def function(self) -> str: ...  # SERVER__TOOL

    @property
    def format(self) -> str: ...  # SERVER.TOOL, the LMC format of its chunks

    @property
    def auto_approve(self) -> bool: ...


class ExternalTools(Protocol):
    """The tools besides code: their descriptions for the prompt, and how to call them."""

    def start(self) -> None:
        """Begin starting what the tools need, in the background."""

    def descriptions(self) -> list[ToolDescription]:
        """The function tools to add to the developer message (waits for the start)."""

    def notices(self) -> list[str]:
        """One-line reports not given yet (a server that did not start)."""

    def find(self, function: str) -> ExternalTool | None: ...

    def arguments(self, tool: Any, text: str) -> dict[str, Any]:
        """The call's arguments (``tool`` is what ``find`` returned); raises ValueError whose
        ``str()`` is exactly what the model is told."""

    def call(self, tool: Any, arguments: dict[str, Any]) -> list[Chunk]:
        """Call it; the result (or the failure, or a cancellation) as computer content chunks.
        A ``KeyboardInterrupt`` while it waits cancels the call and goes on."""

    def cancel(self) -> None:
        """Cancel the calls in progress (from another thread: Interpreter.cancel)."""


class _Settings(Protocol):
    output_limit: int
    history_output_limit: int


class CallHost(Protocol):
    """What a tool call needs of the loop that runs it (:class:`lmc.agent.loop.Loop`)."""

    @property
    def settings(self) -> _Settings: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def cancelled(self) -> threading.Event: ...

    def confirm(
        self,
        target: ToolTarget,
        block: Block,
        decide: Callable[[Block], Answer] | None,
    ) -> Generator[Chunk, None, Decision]: ...

    def notice(self, text: str, harmony: str = "") -> Iterator[Chunk]: ...

    def result(self, target: ToolTarget, text: str) -> str: ...

    def replace_entry(self, index: int | None, content: str) -> None: ...

    def record_run(self, target: ToolTarget, output: RunOutput, told: str) -> None: ...

    def checkpointed(
        self, run: Iterator[Chunk], target: ToolTarget | None = None
    ) -> Iterator[Chunk]: ...


def _edit_note(arguments: str) -> str:
    return f"The user edited the arguments before the call. It was called with:\n{arguments}\n\n"


def _call(
    tools: ExternalTools, tool: Any, arguments: dict[str, Any]
) -> Generator[Chunk, None, list[Chunk]]:
    """Call it; yield its progress chunks as they come (where the provider streams them, with
    ``stream``) and return the result's chunks."""
    stream = getattr(tools, "stream", None)
    pieces = stream(tool, arguments) if stream is not None else tools.call(tool, arguments)
    chunks: list[Chunk] = []
    for chunk in pieces:
        if chunk.get("format") == "progress":  # a live status, not output
            yield chunk
        else:
            chunks.append(chunk)
    return chunks


def run_tool_call(
    loop: CallHost,
    tools: ExternalTools,
    call: PendingCall,
    decide: Callable[[Block], Answer] | None,
) -> Iterator[Chunk]:
    """Check, confirm (on the loop's one confirmation path), call and record one tool call."""
    target = resolve_call(call.header.recipient or "", call.header.channel)
    tool = tools.find(target.author.removeprefix("functions."))
    try:
        if tool is None:
            names = [*tool_names(), *(f"functions.{d.name}" for d in tools.descriptions())]
            raise ToolCallError(
                f"There is no tool named {target.author!r}. The tools are: {', '.join(names)}."
            )
        arguments = tools.arguments(tool, call.text)
    except (ToolCallError, ValueError) as exc:
        yield from loop.notice(str(exc), call.pending + loop.result(target, str(exc)))
        return
    text = call.text.strip() or "{}"
    block: Block = {"type": "tool_call", "format": tool.format, "content": text}
    decision = yield from loop.confirm(target, block, None if tool.auto_approve else decide)
    if not decision.run:
        return
    told = ""
    if decision.edited is not None and decision.edited.strip() != text:
        try:
            arguments = tools.arguments(tool, decision.edited)
        except ValueError as exc:
            message = f"The user edited the arguments, and the edit cannot be used: {exc}"
            yield from loop.notice(message, loop.result(target, message))
            return
        text = json.dumps(arguments, ensure_ascii=False)
        told = _edit_note(text)
        loop.replace_entry(call.entry, text)
    # An MCP server may change files (a filesystem server): checkpointed like code, so the
    # files chunk shows what it changed and %undo puts it back.
    yield from loop.checkpointed(
        _run(loop, tools, tool, arguments, target=target, told=told), target
    )


def _run(
    loop: CallHost,
    tools: ExternalTools,
    tool: ExternalTool,
    arguments: dict[str, Any],
    *,
    target: ToolTarget,
    told: str,
) -> Iterator[Chunk]:
    """Call the tool, stream its output as console chunks and record it."""
    output = RunOutput(loop.settings.output_limit, loop.settings.history_output_limit)
    try:
        yield console_start()
        if loop.cancelled.is_set():  # Interpreter.cancel() came before the call began
            chunks: list[Chunk] = [console_output("[cancelled]\n")]
        else:
            chunks = yield from _call(tools, tool, arguments)
    except BaseException:
        # Ctrl-C or the consumer closing the stream: the call was cancelled.
        output.note("[interrupted]\n")
        loop.record_run(target, output, told)
        raise
    for chunk in chunks:
        output.add(chunk)
        yield chunk
    loop.record_run(target, output, told)
    yield console_end()
