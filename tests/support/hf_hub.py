"""A stand-in Hugging Face Hub on loopback: ``from support.hf_hub import serve_hub``.

A real HTTP server implementing the endpoints huggingface_hub's ``snapshot_download`` and
``hf_hub_download`` use: ``GET /api/models/{repo}/revision/{rev}`` (the commit and the
siblings), ``GET /api/models/{repo}/tree/{rev}`` (the listing), and ``HEAD``/``GET
/{repo}/resolve/{rev}/{file}`` (with ``X-Repo-Commit`` and ``ETag``). Point ``HF_ENDPOINT``
at its URL. Files are served from disk, so a model of hundreds of MB costs no memory.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.loopback import serving_in_thread

__all__ = ["COMMIT", "StandInHub", "serve_hub"]

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class StandInHub:
    """The running hub: its URL, and every request it saw ("GET /path")."""

    url: str
    repos: Mapping[str, Mapping[str, Path]]
    seen: list[str] = field(default_factory=list)

    def downloads(self) -> list[str]:
        """The files whose bodies were sent (GET on a resolve URL)."""
        return [
            line.rsplit("/", 1)[1]
            for line in self.seen
            if "/resolve/" in line and line.startswith("GET ")
        ]


def _etag(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()


class _HubHandler(BaseHTTPRequestHandler):
    """The stand-in hub's requests (``hub``: set per server by :func:`_handler`)."""

    hub: StandInHub

    def _json(self, value: Any) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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

    def _api(self, path: str) -> None:
        for repo, files in self.hub.repos.items():
            if path.startswith(f"/api/models/{repo}/revision/"):
                siblings = [{"rfilename": name} for name in files]
                self._json({"id": repo, "sha": COMMIT, "private": False, "siblings": siblings})
                return
            if path.startswith(f"/api/models/{repo}/tree/"):
                listing = [
                    {"type": "file", "path": name, "size": file.stat().st_size, "oid": "0" * 40}
                    for name, file in files.items()
                ]
                self._json(listing)
                return
        self._not_found("Repository not found", "RepoNotFound")

    def _resolve(self, path: str, send_body: bool) -> None:
        for repo, files in self.hub.repos.items():
            prefix = f"/{repo}/resolve/"
            if path.startswith(prefix):
                _revision, _, name = path[len(prefix) :].partition("/")
                file = files.get(name)
                if file is None:
                    self._not_found("Entry not found", "EntryNotFound")
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{_etag(file)}"')
                self.send_header("Content-Length", str(file.stat().st_size))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if send_body:
                    with file.open("rb") as body:
                        shutil.copyfileobj(body, self.wfile, 1 << 20)
                return
        self._not_found("Repository not found", "RepoNotFound")

    def do_HEAD(self) -> None:
        path = self.path.split("?")[0]
        self.hub.seen.append(f"HEAD {path}")
        self._resolve(path, send_body=False)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.hub.seen.append(f"GET {path}")
        if path.startswith("/api/"):
            self._api(path)
        else:
            self._resolve(path, send_body=True)

    def log_message(self, *args: object) -> None:
        pass


def _handler(hub: StandInHub) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_HubHandler,), {"hub": hub})


@contextmanager
def serve_hub(repos: Mapping[str, Mapping[str, Path]]) -> Iterator[StandInHub]:
    """Serve ``{repo: {file name: path on disk}}`` on 127.0.0.1 until the block ends."""
    hub = StandInHub(url="", repos=repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield hub
