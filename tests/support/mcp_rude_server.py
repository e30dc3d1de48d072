"""A misbehaving MCP server on stdio, for the tests: ``python mcp_rude_server.py``.

It speaks JSON-RPC by hand, because what it sends the SDK would refuse to build: one tool
without an input schema, a tool that runs only as an MCP task, two tools whose names sanitise
alike (``get.item`` and ``get_item``); it prints a banner and log lines on stdout between
messages; ``echo`` answers with its arguments and ``bye`` answers, then exits (a crash between
calls). ``initialize`` is answered with the client's own clientInfo and roots support in the
server's name, so the test can read what lmc sent.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object"}},
    {"name": "no_schema", "description": "Its inputSchema is missing."},
    {
        "name": "task_only",
        "description": "Runs only as a task.",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "required"},
    },
    {"name": "get.item", "description": "One.", "inputSchema": {"type": "object"}},
    {"name": "get_item", "description": "Two.", "inputSchema": {"type": "object"}},
    {"name": "bye", "description": "Answer, then exit.", "inputSchema": {"type": "object"}},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def noise(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        client = params.get("clientInfo", {})
        roots = "roots" in params.get("capabilities", {})
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {
                "name": f"rude (client {client.get('name')} {client.get('version')}, "
                f"roots {roots})",
                "version": "9.9",
            },
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = json.dumps(params.get("arguments") or {}, sort_keys=True)
        return {"content": [{"type": "text", "text": f"{params.get('name')} {text}"}]}
    if method == "ping":
        return {}
    return None


def main() -> None:
    noise("Rude MCP server 1.0 -- starting up")
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        result = answer(request)
        if result is None:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "?"}})
            continue
        noise(f"[log] handled {request.get('method')}")
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        if (request.get("params") or {}).get("name") == "bye":
            sys.exit(0)


if __name__ == "__main__":
    main()
