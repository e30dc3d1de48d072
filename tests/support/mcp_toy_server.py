"""A real MCP server written with the official SDK, for the tests: ``python mcp_toy_server.py``.

``python mcp_toy_server.py`` serves on stdio; ``python mcp_toy_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT (uvicorn); ``python mcp_toy_server.py broken`` fails before
it serves.
Its tools cover what lmc must handle: text, numbers with a schema, an image, a tool error, a
slow tool, a crash in the middle of a call, and state kept between calls.
"""

from __future__ import annotations

import base64
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

#: A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

server = MCPServer("toy")
_notes: list[str] = []


@server.tool(description="Add two whole numbers.\nReturns their sum.")
def add(a: int, b: int) -> str:
    return f"{a} + {b} = {a + b}"


@server.tool(description="Remember a note for later calls.")
def remember(note: str) -> str:
    _notes.append(note)
    return f"remembered {len(_notes)} note(s): {', '.join(_notes)}"


@server.tool(description="A red dot, as a PNG image.")
def red_dot() -> Image:
    return Image(data=PNG, format="png")


@server.tool(description="Always fails with the message given.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Sleep for some seconds, then say so.")
def slow(seconds: float) -> str:
    time.sleep(seconds)
    return f"slept {seconds} s"


@server.tool(description="Wait (without blocking the server); notes it when cancelled.")
async def patient(seconds: float) -> str:
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _notes.append("patient was cancelled")
        raise
    return f"waited {seconds} s"


@server.tool(description="Report progress three times, then finish.")
async def steps(ctx: Context) -> str:
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step}")
    return "three steps done"


@server.tool(description="The client's roots, one URI a line.")
async def roots(ctx: Context) -> str:
    listed = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in listed.roots)


@server.resource("note://today", description="Today's note.")
def today() -> str:
    return "buy milk"


@server.prompt(description="Ask for a review of some code.")
def review(code: str) -> str:
    return f"Please review this code:\n{code}"


@server.tool(description="Exit the server process in the middle of the call.")
def crash() -> str:
    sys.stderr.write("toy server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "broken":
        sys.stderr.write("toy server: cannot open its database\n")
        sys.exit(2)
    if mode == "noisy":  # a banner and a log line on stdout, as some real servers print
        sys.stdout.write("Toy MCP server v1 starting\n[info] listening on stdio\n")
        sys.stdout.flush()
    if mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
