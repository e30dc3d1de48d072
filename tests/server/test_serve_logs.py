"""``lmc serve --verbose`` as a person runs it: its access log shows every request, never
the token (the page is opened with ``/?token=...``, and websockets may carry it too); the
host names it answers to come from the settings (``LMC_SERVER_ALLOWED_HOSTS``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0
TOKEN = "secret-token-4242-never-logged"


def test_the_verbose_log_never_shows_the_token(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LMC_")},
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "LMC_SERVER_TOKEN": TOKEN,
        "LMC_SERVER_ALLOWED_HOSTS": "lmc.example, *.lan.example",
        "NO_COLOR": "1",
    }
    # --api-base: no model is loaded (nothing here asks it anything).
    command = [sys.executable, "-m", "lmc", "serve", "--verbose", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--api-base", "http://127.0.0.1:9/v1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not (url := re.search(r"(http://\S+)\?token=", "".join(lines))):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        base = url.group(1)
        assert httpx.get(f"{base}?token={TOKEN}", timeout=WAIT).status_code == 200
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{base}conversations", headers=headers, timeout=WAIT).json() == []
        # The configured names pass the Host check; any other name is refused.
        port = base.rstrip("/").rsplit(":", 1)[1]
        for host, status in [("lmc.example", 200), ("pc.lan.example", 200), ("evil.example", 403)]:
            named = {**headers, "Host": f"{host}:{port}"}
            got = httpx.get(f"{base}conversations", headers=named, timeout=WAIT).status_code
            assert got == status, host
        with connect(f"{base.replace('http', 'ws')}?token={TOKEN}", open_timeout=WAIT) as ws:
            ws.send(json.dumps({"auth": TOKEN}))
            assert json.loads(ws.recv(timeout=WAIT)) == {"auth": True}
            ws.send(json.dumps({"auth": TOKEN}))  # again, after auth: an error chunk
            assert "already authenticated" in ws.recv(timeout=WAIT)
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    logged = "".join(lines).splitlines() + rest.splitlines()
    requests = [line for line in logged if "GET /" in line or "WebSocket /" in line]
    assert len(requests) >= 3, logged  # the log did show the requests
    printed = [line for line in logged if TOKEN in line]
    # Only the start-up notice names it (as Jupyter does), nothing the server logs.
    assert [line.strip().split(":")[0] for line in printed] == ["open the chat page"], printed
