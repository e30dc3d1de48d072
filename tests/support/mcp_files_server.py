"""An MCP server that changes files, written with the official SDK, for the tests:
``python mcp_files_server.py ROOT`` serves on stdio one tool that writes a text file under ROOT
(as a filesystem server's ``write_file`` does)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("files")
ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()


@server.tool(description="Write text to a file (relative to the served folder).")
def write_file(path: str, text: str) -> str:
    target = ROOT / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return f"wrote {len(text)} characters to {path}"


if __name__ == "__main__":
    server.run()
