"""``lmc acp`` with the official TypeScript SDK (``@agentclientprotocol/sdk`` 2.4.0) as the
editor: a Node client (ts_client.mjs) initializes, opens a session, prompts (allowing the
block), loads the session again and calls an unknown method. The SDK parses every message
with its generated schemas; then every line lmc wrote is checked here against the JSON
Schema the same package ships (``schema/v1/schema.json``), the protocol's own."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
from support.acp_client import ROOT
from support.acp_typescript import official_schema, sdk_folder
from support.cli_replays import code, final

CLIENT = Path(__file__).with_name("ts_client.mjs")


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = official_schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def _definition(message: dict[str, Any]) -> tuple[str, Any]:
    """The schema definition a line of lmc's must match, and the part it describes."""
    method = message.get("method")
    if method == "session/update":
        return "SessionNotification", message["params"]
    if method == "session/request_permission":
        return "RequestPermissionRequest", message["params"]
    if "error" in message:
        return "Error", message["error"]
    result = message["result"]
    for key, name in (
        ("protocolVersion", "InitializeResponse"),
        ("sessionId", "NewSessionResponse"),
        ("stopReason", "PromptResponse"),
    ):
        if key in result:
            return name, result
    return "LoadSessionResponse", result


def test_the_typescript_sdk_drives_lmc_acp_and_every_line_fits_the_official_schema(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, replay: Callable[..., Path]
) -> None:
    folder = sdk_folder()
    client = folder / "ts_client.mjs"
    shutil.copyfile(CLIENT, client)  # beside its node_modules, where Node resolves the SDK
    project = tmp_path / "project"
    project.mkdir()
    script = replay(code('open("ts.txt", "w").write("typed\\n")\nprint(6 * 7)'), final("42."))
    command = [sys.executable, "-m", "lmc", "acp", "-m", str(tiny_model), "--replay", str(script)]
    lines = tmp_path / "lines.jsonl"
    done = subprocess.run(
        ["node", str(client), json.dumps(command), str(project), str(lines)],
        capture_output=True,
        text=True,
        env={**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["init"]["protocolVersion"] == 1
    assert summary["init"]["agentCapabilities"]["loadSession"] is True
    assert summary["stopReason"] == "end_turn"
    assert summary["unknown"] == -32601
    assert summary["exitCode"] == 0
    assert (project / "ts.txt").read_text() == "typed\n"

    live, replayed = summary["updates"][: summary["live"]], summary["updates"][summary["live"] :]
    kinds = [u["sessionUpdate"] for u in live]
    assert "tool_call" in kinds and "agent_message_chunk" in kinds
    [asked] = summary["asked"]
    assert asked["toolCall"]["kind"] == "execute"
    final_update = [u for u in live if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final_update["status"] == "completed"
    diff = next(c for c in final_update["content"] if c["type"] == "diff")
    assert diff == {
        "type": "diff",
        "path": str(project / "ts.txt"),
        "oldText": None,
        "newText": "typed\n",
    }
    assert replayed[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "compute"},
    }

    written = [json.loads(line) for line in lines.read_text().splitlines() if line.strip()]
    assert len(written) > 10
    for message in written:
        assert message["jsonrpc"] == "2.0"
        name, part = _definition(message)
        errors = [e.message for e in _validator(name).iter_errors(part)]
        assert not errors, f"{name}: {errors} in {message}"
