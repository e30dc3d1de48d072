"""``%mcp`` in the chat: what the servers offer, a resource's text, a prompt; and attaching a
resource or a prompt to the next message.

``%mcp`` lists each server's tools, resources and prompts; ``%mcp read SERVER URI`` shows a
resource; ``%mcp attach SERVER URI`` adds it to the next message (as a fenced block naming
its URI); ``%mcp prompt SERVER NAME [ARG=VALUE ...]`` adds a server's prompt to it. The text
comes back as one string for the chat to show; a failure is one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lmc.mcp.client import McpServerError
from lmc.mcp.results import prompt_text, resource_chunks

if TYPE_CHECKING:
    from lmc.mcp.tools import McpTools

__all__ = ["USAGE", "browse"]

USAGE: Final = (
    "%mcp                           the MCP servers' tools, resources and prompts\n"
    "%mcp read SERVER URI           show a resource\n"
    "%mcp attach SERVER URI         add a resource to your next message\n"
    "%mcp prompt SERVER NAME [K=V]  add a server's prompt to your next message"
)


def _overview(tools: McpTools) -> str:
    lines: list[str] = []
    for status in tools.statuses():
        name = status.config.name
        if not status.started:
            lines.append(f"{name}: {status.error}")
            continue
        lines.append(f"{name}: {len(status.tools)} tools")
        lines += [f"  tool {tool.name}" for tool in status.tools]
        lines += [f"  resource {res.uri}  {res.name}" for res in status.resources]
        for prompt in status.prompts:
            args = " ".join(f"{n}=" if required else f"[{n}=]" for n, required in prompt.arguments)
            lines.append(f"  prompt {prompt.name} {args}".rstrip())
    return "\n".join(lines) or "no MCP servers in this session"


def _resource_text(tools: McpTools, server: str, uri: str) -> str:
    chunks = resource_chunks(tools.manager.read_resource(server, uri))
    return "".join(str(c["content"]) for c in chunks if c["type"] == "console")


def browse(tools: McpTools | None, args: list[str], attach: list[str]) -> str:
    """Run ``%mcp ARGS``; what to show. Attachments for the next message go to ``attach``."""
    if tools is None:
        return "no MCP servers in this session: add [mcp.servers.NAME] to the config"
    try:
        if not args:
            return _overview(tools)
        verb, rest = args[0], args[1:]
        if verb in ("read", "attach") and len(rest) == 2:
            text = _resource_text(tools, rest[0], rest[1])
            if verb == "read":
                return text
            attach.append(f"Resource {rest[1]} (from MCP server {rest[0]}):\n```\n{text}```")
            return f"attached {rest[1]} ({len(text):,} characters) to your next message"
        if verb == "prompt" and len(rest) >= 2:
            pairs = [item.partition("=") for item in rest[2:]]
            result = tools.manager.get_prompt(rest[0], rest[1], {k: v for k, _, v in pairs})
            attach.append(prompt_text(result))
            return f"added the prompt {rest[1]} to your next message"
    except McpServerError as exc:
        return str(exc)
    return USAGE
