"""Loopback servers that answer as Ollama, LM Studio, vLLM, llama.cpp's server and a
key-protected hosted endpoint do, in the shapes each sends at the version named beside it
(the shapes, whether captured or assembled, and their sources: recorded_openai.py,
recorded_native.py)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.loopback import serving_in_thread
from support.recorded_common import ANSWER, CODE, REASONING, Reply, Route, json_reply
from support.recorded_native import (
    OLLAMA_TAGS,
    OLLAMA_V1_MODELS,
    ollama_chat,
    ollama_completions,
    ollama_openai_chat,
    vllm_responses,
)
from support.recorded_openai import (
    HOSTED_401,
    HOSTED_KEY,
    HOSTED_MODELS,
    LLAMA_MODELS,
    LMS_MODELS,
    LMS_V0_MODELS,
    VLLM_MODELS,
    hosted_chat,
    llama_chat,
    lmstudio_chat,
    vllm_chat,
    vllm_chat_0_10,
    vllm_raw,
)

__all__ = [
    "ANSWER",
    "CODE",
    "HOSTED_KEY",
    "REASONING",
    "SERVERS",
    "Recorded",
    "Reply",
    "serving",
    "vllm_responses",
]

# ----------------------------------------------------------------------------- the server


@dataclass
class Recorded:
    """A running server: its root URL and every request it got (path, JSON body, headers)."""

    root: str
    requests: list[tuple[str, dict[str, Any] | None, dict[str, str]]] = field(default_factory=list)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [b for p, b, _ in self.requests if p == path and b is not None]


def _handler(
    routes: dict[str, Route], key: str | None, record: Recorded
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, body: dict[str, Any] | None) -> None:
            path = self.path.split("?", 1)[0]
            record.requests.append((path, body, dict(self.headers)))
            if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
                status, kind, chunks = json_reply(401, HOSTED_401)
            elif path in routes:
                status, kind, chunks = routes[path](body)
            else:
                status, kind, chunks = json_reply(404, {"error": {"message": f"Not found: {path}"}})
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            self._answer(json.loads(self.rfile.read(length) or b"null"))

    return Handler


@contextmanager
def serving(
    routes: dict[str, Route], key: str | None = None, tls: ssl.SSLContext | None = None
) -> Iterator[Recorded]:
    """The server on a free loopback port (https with ``tls``); stopped after."""
    record = Recorded("")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes, key, record))
    scheme = "http"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    record.root = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        yield record


def _static(body: Any) -> Route:
    return lambda _request: json_reply(200, body)


#: Each server's routes, as the real one answers them.
SERVERS: dict[str, dict[str, Route]] = {
    "ollama": {
        "/api/version": _static({"version": "0.11.4"}),
        "/api/tags": _static(OLLAMA_TAGS),
        "/api/chat": ollama_chat,
        "/v1/models": _static(OLLAMA_V1_MODELS),
        "/v1/completions": ollama_completions,
        "/v1/chat/completions": ollama_openai_chat,
    },
    "lmstudio": {
        "/api/v0/models": _static(LMS_V0_MODELS),
        "/v1/models": _static(LMS_MODELS),
        "/v1/chat/completions": lmstudio_chat,
    },
    "vllm": {
        "/v1/models": _static(VLLM_MODELS),
        "/v1/completions": vllm_raw,
        "/v1/chat/completions": vllm_chat,
    },
    # vLLM 0.10: reasoning in "reasoning_content" (renamed in 0.11.1; recorded_openai.py).
    "vllm-0.10": {
        "/v1/models": _static(VLLM_MODELS),
        "/v1/completions": vllm_raw,
        "/v1/chat/completions": vllm_chat_0_10,
    },
    "vllm-responses": {
        "/v1/models": _static(VLLM_MODELS),
        "/v1/responses": vllm_responses,
    },
    "llama.cpp": {
        "/v1/models": _static(LLAMA_MODELS),
        "/v1/chat/completions": llama_chat,
    },
    "hosted": {
        "/v1/models": _static(HOSTED_MODELS),
        "/v1/chat/completions": hosted_chat,
    },
}
