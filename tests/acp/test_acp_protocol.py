"""``lmc acp`` on raw lines, as a careless or hostile client writes them: every bad line gets
its JSON-RPC error and the valid ones are still served; MCP servers a session names start
and their calls show as tool calls; closing stdin ends lmc and everything it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.acp_client import ROOT
from support.acp_schema import SchemaCheck
from support.cli_replays import code, final
from support.mcp_servers import toy_http
from support.processes import descendants, wait_gone

from lmc.agent.storage import ConversationStore

FILES_SERVER = ROOT / "tests" / "support" / "mcp_files_server.py"


class Raw:
    """lmc acp on pipes: write lines, read its lines (each checked against the schema)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.checker = SchemaCheck()

    def write(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.checker.client_sent(message)
        self.write(json.dumps(message).encode())

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "lmc acp closed stdout"
        message: dict[str, Any] = json.loads(line)
        self.checker.agent_sent(message)
        return message

    def until(self, ident: int, answer: Callable[[dict[str, Any]], Any] | None = None) -> Any:
        """Read until the response to ``ident``; lmc's questions go to ``answer``."""
        seen: list[dict[str, Any]] = []
        while True:
            message = self.read()
            if message.get("method") == "session/request_permission":
                assert answer is not None, message
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": answer(message)})
            elif message.get("id") == ident and "method" not in message:
                return message, seen
            else:
                seen.append(message)


@contextmanager
def raw_agent(env: dict[str, str], cwd: Path, *args: str) -> Iterator[Raw]:
    process = subprocess.Popen(
        [sys.executable, "-m", "lmc", "acp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
    )
    try:
        yield Raw(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def request(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def test_bad_lines_get_json_rpc_errors_and_valid_ones_are_still_served(
    lmc_env: dict[str, str], tmp_path: Path, tiny_model: Path, replay: Callable[..., Path]
) -> None:
    script = replay(final("unused"))
    with raw_agent(lmc_env, tmp_path, "-m", str(tiny_model), "--replay", str(script)) as acp:
        acp.write(b"this is not JSON")
        first = acp.read()
        assert first["id"] is None and first["error"]["code"] == -32700
        acp.write(b"[1, 2]")
        acp.write(b'{"jsonrpc": "1.0", "id": 7, "method": "initialize"}')
        acp.send(request(8, "no/such/method", {}))
        acp.send({"jsonrpc": "2.0", "method": "no/such/notification", "params": {}})
        acp.send(request(9, "session/new", {"cwd": "relative/path", "mcpServers": []}))
        acp.send(request(10, "session/prompt", {"sessionId": "nope", "prompt": []}))
        acp.send(request(11, "initialize", {"protocolVersion": 1}))
        answers: dict[Any, dict[str, Any]] = {}
        while len(answers) < 6:
            message = acp.read()
            answers[message["id"]] = message
        assert answers[None]["error"]["code"] == -32600  # the array
        assert answers[7]["error"]["code"] == -32600
        assert answers[8]["error"]["code"] == -32601
        assert answers[9]["error"]["code"] == -32602
        assert answers[10]["error"]["code"] == -32002
        assert answers[11]["result"]["protocolVersion"] == 1  # still serving
        acp.send(request(12, "initialize", {"protocolVersion": 99}))
        assert acp.read()["result"]["protocolVersion"] == 1  # lmc's version, as the SDKs do
        acp.send(request(13, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        unused = acp.read()["result"]["sessionId"]
        with ConversationStore(Path(lmc_env["LMC_DATA_DIR"]) / "conversations.db") as store:
            assert store.get(unused).message_count == 0  # stored at once, empty
        assert acp.process.stdin is not None
        acp.process.stdin.close()
        assert acp.process.wait(timeout=120) == 0
    with ConversationStore(Path(lmc_env["LMC_DATA_DIR"]) / "conversations.db") as store:
        assert store.list_conversations() == []  # nobody prompted it: not kept


def test_a_session_s_mcp_servers_start_and_closing_stdin_ends_lmc_and_all_it_started(
    lmc_env: dict[str, str], tmp_path: Path, tiny_model: Path, replay: Callable[..., Path]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old\n")
    script = replay(
        "<|channel|>commentary to=functions.files__write_file <|constrain|>json"
        '<|message|>{"path": "notes.txt", "text": "new\\n"}<|call|>',
        code("print('kernel up')"),
        final("Written."),
    )
    files = {
        "name": "files",
        "command": sys.executable,
        "args": [str(FILES_SERVER), str(project)],
        "env": [{"name": "PYTHONPATH", "value": str(ROOT)}],
    }
    args = ("-y", "-m", str(tiny_model), "--replay", str(script))
    with raw_agent(lmc_env, tmp_path, *args) as acp:
        acp.send(request(1, "initialize", {"protocolVersion": 1}))
        acp.until(1)
        acp.send(request(2, "session/new", {"cwd": str(project), "mcpServers": [files]}))
        created, _ = acp.until(2)
        session = created["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "write it"}]}
        acp.send(request(3, "session/prompt", prompt))
        done, seen = acp.until(3)
        assert done["result"]["stopReason"] == "end_turn"
        started = descendants(acp.process.pid)
        assert started, "no kernel or MCP server is running"
        updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        call = next(u for u in updates if u["sessionUpdate"] == "tool_call")
        assert call["title"] == "files.write_file" and call["kind"] == "edit"
        assert call["rawInput"] == {"path": "notes.txt", "text": "new\n"}
        last = [u for u in updates if u.get("toolCallId") == call["toolCallId"]][-1]
        assert last["status"] == "completed"
        diff = next(c for c in last["content"] if c["type"] == "diff")
        assert diff == {
            "type": "diff",
            "path": str(project / "notes.txt"),
            "oldText": "old\n",
            "newText": "new\n",
        }
        assert acp.process.stdin is not None
        acp.process.stdin.close()
        assert acp.process.wait(timeout=120) == 0
        assert not wait_gone(started, timeout=60), "lmc left processes behind"


def test_a_model_that_cannot_be_opened_is_the_prompt_s_error_and_lmc_goes_on(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-model.gguf"
    with raw_agent(lmc_env, tmp_path, "-m", str(missing)) as acp:
        acp.send(request(1, "initialize", {"protocolVersion": 1}))
        acp.until(1)
        acp.send(request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        created, _ = acp.until(2)
        prompt = {
            "sessionId": created["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "hi"}],
        }
        acp.send(request(3, "session/prompt", prompt))
        failed, _ = acp.until(3)
        assert failed["error"]["code"] == -32603
        assert "no-such-model.gguf" in failed["error"]["message"]
        acp.send(request(4, "initialize", {"protocolVersion": 1}))
        assert acp.until(4)[0]["result"]["protocolVersion"] == 1


def test_an_http_mcp_server_of_the_session_is_reached(
    lmc_env: dict[str, str], tmp_path: Path, tiny_model: Path, replay: Callable[..., Path]
) -> None:
    script = replay(
        "<|channel|>commentary to=functions.toy__add <|constrain|>json"
        '<|message|>{"a": 2, "b": 3}<|call|>',
        final("Five."),
    )
    args = ("-y", "-m", str(tiny_model), "--replay", str(script))
    with toy_http() as url, raw_agent(lmc_env, tmp_path, *args) as acp:
        acp.send(request(1, "initialize", {"protocolVersion": 1}))
        assert acp.until(1)[0]["result"]["agentCapabilities"]["mcpCapabilities"]["http"]
        toy = {"type": "http", "name": "toy", "url": url, "headers": []}
        acp.send(request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": [toy]}))
        created, _ = acp.until(2)
        prompt = {
            "sessionId": created["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "add"}],
        }
        acp.send(request(3, "session/prompt", prompt))
        done, seen = acp.until(3)
        assert done["result"]["stopReason"] == "end_turn"
        updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        call = [u for u in updates if u.get("toolCallId") == "call-1"]
        assert call[0]["title"] == "toy.add" and call[0]["rawInput"] == {"a": 2, "b": 3}
        assert call[-1]["status"] == "completed" and "5" in json.dumps(call[-1]["content"])
