"""``%mcp`` in the chat: the servers' offer, a resource read or attached, a prompt attached.

On main resources and prompts could not be reached from the chat at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.mcp_servers import toy_stdio

from lmc.agent import Interpreter
from lmc.messages import ToolCallBlock
from lmc.terminal.magic import ChatState, run_magic


@pytest.fixture
def chat() -> Iterator[tuple[ChatState, list[str]]]:
    said: list[str] = []
    interpreter = Interpreter(mcp_servers={"toy": toy_stdio()})
    state = ChatState(interpreter, confirmer=None, say=said.append)  # type: ignore[arg-type]
    yield state, said
    interpreter.close()


def test_mcp_lists_reads_and_attaches(chat: tuple[ChatState, list[Any]]) -> None:
    state, said = chat
    run_magic("%mcp", state)
    overview = said.pop().splitlines()
    assert overview[0] == "toy: 9 tools"
    assert "  resource note://today  today" in overview
    assert "  prompt review code=" in overview
    run_magic("%mcp read toy note://today", state)
    assert said.pop() == "buy milk\n"
    run_magic("%mcp attach toy note://today", state)
    assert said.pop() == "attached note://today (9 characters) to your next message"
    run_magic("%mcp prompt toy review code=print(1)", state)
    assert said.pop() == "added the prompt review to your next message"
    assert state.attachments == [
        "Resource note://today (from MCP server toy):\n```\nbuy milk\n```",
        "Please review this code:\nprint(1)",
    ]
    run_magic("%mcp read toy note://nothing", state)
    assert said.pop().startswith("MCP server 'toy' refused the call: ")
    run_magic("%mcp what", state)
    assert said.pop().startswith("%mcp                           the MCP servers'")


def test_mcp_without_servers_says_so() -> None:
    said: list[str] = []
    interpreter = Interpreter()
    try:
        run_magic("%mcp", ChatState(interpreter, confirmer=None, say=said.append))  # type: ignore[arg-type]
    finally:
        interpreter.close()
    assert said == ["no MCP servers in this session: add [mcp.servers.NAME] to the config"]


def test_without_a_terminal_a_tool_call_is_not_called_code() -> None:
    # On main the person read "code not run" for an MCP tool call.
    from lmc.terminal.confirm import Confirmer, NoTerminalError

    said: list[str] = []
    confirmer = Confirmer(auto_run=False, ask=None, say=said.append)
    block: ToolCallBlock = {"type": "tool_call", "format": "toy.add", "content": '{"a": 1}'}
    with pytest.raises(NoTerminalError) as raised:  # nobody to ask: stop, never decline silently
        confirmer(block)
    assert str(raised.value) == (
        "a tool call needs your confirmation and there is no terminal to ask: pass -y to call "
        "tools without asking (or auto_approve them in the server's table), or run lmc where "
        "it can ask"
    )
