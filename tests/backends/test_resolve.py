"""Model resolution: paths, and hf: downloads from a stand-in Hugging Face Hub on loopback.

The stand-in is a real HTTP server implementing the few endpoints huggingface_hub uses:
``HEAD``/``GET /{repo}/resolve/{revision}/{file}`` (with ``X-Repo-Commit`` and ``ETag``) and
``GET /api/models/{repo}/tree/{revision}`` (the file listing). Resolution runs in a fresh
process, as ``lmc`` would, with ``HF_ENDPOINT`` and ``HF_HOME`` pointing at the test's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from lmc.backends.resolve import DEFAULT_MODEL, NO_MODEL_HINT, parse_hf_spec, resolve_model
from lmc.errors import ModelNotFoundError

ROOT = Path(__file__).resolve().parents[2]
REPO = "lmc-test/tiny-gpt-oss-GGUF"
FILE = "tiny-gpt-oss.gguf"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Hub(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    seen: ClassVar[list[str]] = []

    def _resolve(self, send_body: bool) -> None:
        Hub.seen.append(f"{self.command} {self.path}")
        prefix = f"/{REPO}/resolve/"
        path = self.path.split("?")[0]
        if not path.startswith(prefix):
            self._not_found("Repository not found", "RepoNotFound")
            return
        _revision, _, name = path[len(prefix) :].partition("/")
        data = self.files.get(name)
        if data is None:
            self._not_found("Entry not found", "EntryNotFound")
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if send_body:
            self.wfile.write(data)

    def _not_found(self, message: str, code: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(404)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self._resolve(send_body=False)

    def do_GET(self) -> None:
        if self.path.startswith(f"/api/models/{REPO}/tree/"):
            Hub.seen.append(f"GET {self.path}")
            listing = [
                {"type": "file", "path": name, "size": len(data), "oid": "0" * 40}
                for name, data in self.files.items()
            ]
            body = json.dumps(listing).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self._resolve(send_body=True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hub(tiny_model: Path) -> Iterator[str]:
    Hub.files = {FILE: tiny_model.read_bytes(), "README.md": b"# tiny\n"}
    Hub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def resolve_in_process(spec: str, endpoint: str, hf_home: Path) -> dict[str, Any]:
    """Resolve ``spec`` in a fresh Python, as the CLI would; returns path or error."""
    code = (
        "import json, sys\n"
        "from lmc.backends.resolve import resolve_model\n"
        "from lmc.errors import LmcError\n"
        "try:\n"
        "    print(json.dumps({'path': str(resolve_model(sys.argv[1]))}))\n"
        "except LmcError as e:\n"
        "    print(json.dumps({'error': type(e).__name__, 'message': str(e), 'hint': e.hint}))\n"
    )
    env = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(hf_home),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_ETAG_TIMEOUT": "3",
        "HF_HUB_DOWNLOAD_TIMEOUT": "5",
        "NO_PROXY": "127.0.0.1,localhost",
        "PYTHONPATH": str(ROOT),
    }
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", code, spec],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_hf_download_then_reuse_from_the_cache(hub: str, tmp_path: Path, tiny_model: Path) -> None:
    home = tmp_path / "hf-home"
    first = resolve_in_process(f"hf:{REPO}:{FILE}", hub, home)
    path = Path(first["path"])
    assert path.read_bytes() == tiny_model.read_bytes()
    assert home in path.parents  # in huggingface_hub's own cache
    assert any(line.startswith("GET ") and FILE in line for line in Hub.seen)

    # The hub is unreachable now: the cached file is used.
    dead = "http://127.0.0.1:9"  # the discard port: connection refused
    again = resolve_in_process(f"hf:{REPO}:{FILE}", dead, home)
    assert Path(again["path"]).read_bytes() == tiny_model.read_bytes()


def test_hf_repo_without_file_picks_its_only_gguf(hub: str, tmp_path: Path) -> None:
    result = resolve_in_process(f"hf:{REPO}", hub, tmp_path / "hf-home")
    assert Path(result["path"]).name == FILE


def test_missing_file_and_repo_are_clear(hub: str, tmp_path: Path) -> None:
    home = tmp_path / "hf-home"
    missing_file = resolve_in_process(f"hf:{REPO}:nope.gguf", hub, home)
    assert missing_file["error"] == "ModelNotFoundError"
    assert missing_file["message"] == f"hf:{REPO}:nope.gguf: the repository has no such file"
    assert missing_file["hint"] == NO_MODEL_HINT
    missing_repo = resolve_in_process("hf:nobody/nothing:x.gguf", hub, home)
    assert missing_repo["error"] == "ModelNotFoundError"
    assert missing_repo["message"] == (
        "hf:nobody/nothing:x.gguf: no such repository on the Hugging Face Hub (or it is private)"
    )
    assert missing_repo["hint"] == NO_MODEL_HINT


def test_no_model_and_no_network_is_one_clear_paragraph(tmp_path: Path) -> None:
    result = resolve_in_process(DEFAULT_MODEL, "http://127.0.0.1:9", tmp_path / "hf-home")
    assert result["error"] == "ModelNotFoundError"
    assert "cannot be reached" in result["message"]
    assert "\n" not in result["message"]
    assert result["hint"] == NO_MODEL_HINT
    assert "--model PATH.gguf" in result["hint"]


def test_local_paths(tiny_model: Path, tmp_path: Path) -> None:
    assert resolve_model(str(tiny_model)) == tiny_model
    with pytest.raises(ModelNotFoundError, match="does not exist") as info:
        resolve_model(str(tmp_path / "absent.gguf"))
    assert info.value.hint == NO_MODEL_HINT
    with pytest.raises(ModelNotFoundError, match="is a directory"):
        resolve_model(str(tmp_path))


@pytest.mark.parametrize("spec", ["hf:", "hf:justaname", "hf:a/b/c:x.gguf", "hf:/x"])
def test_bad_hf_specs(spec: str) -> None:
    with pytest.raises(ModelNotFoundError, match="not a Hugging Face model"):
        parse_hf_spec(spec)


def test_hf_spec_parsing() -> None:
    assert parse_hf_spec("hf:a/b") == ("a/b", None)
    assert parse_hf_spec("hf:a/b:c.gguf") == ("a/b", "c.gguf")
