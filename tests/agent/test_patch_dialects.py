"""apply_patch through servers: raw completions get lmc's Harmony prompt (the reference's
declaration); chat-style ones (Chat Completions, the Responses API, Ollama's /api/chat) are
offered it as Codex declares it (a function taking ``{"input": string}``), the
server's call comes back as the raw patch gpt-oss writes, is applied, and goes back with its
result under the server's id. The servers: support.recorded_patch (assembled from the
recorded envelopes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.recorded_patch import EDITED, PATCH, PATCH_SERVERS
from support.recorded_servers import serving

from lmc.agent import Interpreter
from lmc.backends import BackendConfig, open_backend
from lmc.computer import Computer
from lmc.messages import Chunk


def _tools(dialect: str, body: dict[str, Any]) -> dict[str, Any]:
    """The apply_patch function a request offers, as (description, parameters)."""
    for tool in body.get("tools") or []:
        function = tool if dialect == "responses" else tool["function"]
        if function["name"] == "apply_patch":
            return {"description": function["description"], "parameters": function["parameters"]}
    raise AssertionError("apply_patch was not offered")


def _conversation(dialect: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """The call's arguments and the result a request carries."""
    out: list[tuple[str, str]] = []
    if dialect == "responses":
        for item in body["input"]:
            if item.get("type") == "function_call":
                out.append(("call", item["arguments"]))
            elif item.get("type") == "function_call_output":
                out.append(("result", item["output"]))
        return out
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            if not isinstance(arguments, str):  # Ollama: an object
                arguments = json.dumps(arguments)
            out.append(("call", arguments))
        if message["role"] == "tool":
            out.append(("result", message["content"]))
    return out


@pytest.mark.parametrize("dialect", ["completions", "chat", "responses", "ollama"])
def test_a_servers_patch_call_is_applied_and_answered(tmp_path: Path, dialect: str) -> None:
    routes, path, model = PATCH_SERVERS[dialect]
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_bytes(b"alpha\nbeta\n")
    config = BackendConfig(api_base="", api_style=dialect, model=model)
    chunks: list[Chunk] = []
    with serving(routes) as recorded, Computer(cwd=work, sandbox="off") as computer:
        config.api_base = recorded.root
        with Interpreter(
            backend=open_backend(config),
            computer=computer,
            db_path=tmp_path / "db.sqlite",
            auto_run=True,
        ) as interpreter:
            chunks = list(interpreter.chat("edit the notes", stream=True, display=False))
            interpreter.backend.close()
        bodies = recorded.bodies(path)
    assert (work / "notes.txt").read_bytes() == b"alpha\nBETA\n"
    calls = [c for c in chunks if c["type"] == "tool_call" and "content" in c]
    assert "".join(str(c["content"]) for c in calls) == PATCH  # as gpt-oss writes it: raw
    assert {c.get("format") for c in calls} == {"apply_patch"}
    assert EDITED in "".join(str(c.get("content", "")) for c in chunks if c["type"] == "message")
    if dialect == "completions":  # lmc's own Harmony prompt: the reference's declaration
        assert "// Patch a file\ntype apply_patch = (_: string) => any;" in bodies[0]["prompt"]
        assert "Use `apply_patch` to edit files." in bodies[0]["prompt"]
        header = "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>"
        assert header + "Done!<|end|>" in bodies[1]["prompt"]
        return
    assert _tools(dialect, bodies[0]) == {
        "description": "Patch a file",
        "parameters": {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "Formatted patch code"}},
            "required": ["input"],
        },
    }
    call, result = _conversation(dialect, bodies[1])
    assert call[0] == "call" and json.loads(call[1]) == {"input": PATCH}
    assert result == ("result", "Done!")
    # The instructions the server gets carry apply_patch.md.
    assert "Use `apply_patch` to edit files." in json.dumps(bodies[0])
