"""OpenAIServerBackend against real servers on loopback.

llama-cpp-python's own server (``python -m llama_cpp.server``) serves the tiny model for the
happy paths; a small real ``http.server`` answers with exactly the bytes a test needs for
the rest (vLLM-style special tokens in the text, HTTP errors, malformed events, stalls).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support.llama_server import llama_server as running_llama_server

from lmc.backends import BackendConfig, Piece, SamplingSettings, StopReason, open_backend
from lmc.backends.openai_server import OpenAIServerBackend
from lmc.errors import ServerError, StreamDroppedError
from lmc.harmony import tokens

CALL_PROMPT = (
    "<|start|>user<|message|>weather?<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
)
FINAL_PROMPT = "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ llama.cpp's server


@pytest.fixture(scope="module")
def llama_server(tiny_model: Path) -> Iterator[str]:
    with running_llama_server(tiny_model, context=512) as base:
        yield base


def first_stopping(backend: OpenAIServerBackend, prompt: str) -> tuple[Any, list[Piece]]:
    """Sample with successive seeds until the server stops on its own (an end-of-turn token)."""
    for seed in range(40):
        generation = backend.generate(prompt, SamplingSettings(max_tokens=200, seed=seed))
        pieces = list(generation)
        if generation.stop_reason is not StopReason.MAX_TOKENS:
            return generation, pieces
    raise AssertionError("the server never stopped on an end-of-turn token in 40 tries")


def test_llama_server_streams_and_max_tokens(llama_server: str) -> None:
    with open_backend(BackendConfig(api_base=llama_server, api_style="completions")) as backend:
        generation = backend.generate(FINAL_PROMPT, SamplingSettings(max_tokens=6, seed=1))
        pieces = list(generation)
        assert generation.stop_reason is StopReason.MAX_TOKENS
        assert all(not p.special for p in pieces)
        assert 0 < generation.completion_tokens <= 6


def test_llama_server_hidden_stop_is_return_without_recipient(llama_server: str) -> None:
    with OpenAIServerBackend(BackendConfig(api_base=llama_server)) as backend:
        generation, pieces = first_stopping(backend, FINAL_PROMPT)
        assert generation.stop_reason is StopReason.RETURN
        assert pieces[-1] == Piece(tokens.RETURN, special=True)


def test_llama_server_hidden_stop_is_call_with_recipient(llama_server: str) -> None:
    with OpenAIServerBackend(BackendConfig(api_base=llama_server)) as backend:
        generation, pieces = first_stopping(backend, CALL_PROMPT)
        assert generation.stop_reason is StopReason.CALL
        assert pieces[-1] == Piece(tokens.CALL, special=True)


def test_llama_server_http_error_is_clear(llama_server: str) -> None:
    with (
        OpenAIServerBackend(BackendConfig(api_base=llama_server)) as backend,
        pytest.raises(
            ServerError, match=r"HTTP 500: 1 validation error: .*greater than or equal to 0"
        ),
    ):
        list(backend.generate(FINAL_PROMPT, SamplingSettings(max_tokens=-1)))


def test_llama_server_failing_mid_request_is_clear(llama_server: str) -> None:
    """llama_cpp.server answers 200 and then closes an empty stream when the prompt overflows."""
    with (
        OpenAIServerBackend(BackendConfig(api_base=llama_server)) as backend,
        pytest.raises(ServerError, match="closed the stream without sending any event"),
    ):
        list(backend.generate("word " * 2000, SamplingSettings(max_tokens=5)))


# ------------------------------------------------------------------ a scripted server


class Scripted(BaseHTTPRequestHandler):
    """Answers every POST with ``plan``: (status, [(delay_s, bytes)...]); a delay of ``None``
    waits until the test sets ``released`` (at most 30 s)."""

    plan: ClassVar[tuple[int, Sequence[tuple[float | None, bytes]]]] = (200, [])
    requests: ClassVar[list[dict[str, Any]]] = []
    released: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        Scripted.requests.append(json.loads(self.rfile.read(length)))
        status, chunks = self.plan
        self.send_response(status)
        content_type = "text/event-stream" if status == 200 else "application/json"
        self.send_header("Content-Type", content_type)
        self.end_headers()
        try:
            for delay, data in chunks:
                if delay is None:
                    self.released.wait(30)
                else:
                    time.sleep(delay)
                self.wfile.write(data)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Scripted.requests = []
    Scripted.released = threading.Event()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def sse(*texts: str, finish: str | None = "stop", done: bool = True) -> list[tuple[float, bytes]]:
    events = [{"choices": [{"index": 0, "text": t, "finish_reason": None}]} for t in texts]
    if finish is not None:
        events.append({"choices": [{"index": 0, "text": "", "finish_reason": finish}]})
    chunks = [(0.0, f"data: {json.dumps(e)}\n\n".encode()) for e in events]
    if done:
        chunks.append((0.0, b"data: [DONE]\n\n"))
    return chunks


def run(
    api_base: str, prompt: str = "<|start|>assistant", **config: Any
) -> tuple[Any, list[Piece]]:
    with OpenAIServerBackend(BackendConfig(api_base=api_base, **config)) as backend:
        generation = backend.generate(prompt)
        return generation, list(generation)


def test_markers_in_text_become_special_pieces_even_when_split(scripted: str) -> None:
    Scripted.plan = (
        200,
        sse("<|chan", "nel|>commentary to=functions.f <|cons", "train|>json<|mes", "sage|>{}"),
    )
    generation, pieces = run(scripted)
    assert pieces == [
        Piece(tokens.CHANNEL, True), Piece("commentary to=functions.f "),
        Piece(tokens.CONSTRAIN, True), Piece("json"), Piece(tokens.MESSAGE, True),
        Piece("{}"), Piece(tokens.CALL, True),
    ]  # fmt: skip
    assert generation.stop_reason is StopReason.CALL
    request = Scripted.requests[0]
    assert request["skip_special_tokens"] is False and request["stream"] is True
    assert request["prompt"] == "<|start|>assistant"


def test_recipient_of_a_later_message_decides(scripted: str) -> None:
    Scripted.plan = (
        200,
        sse(
            "<|channel|>analysis<|message|>think<|end|>",
            "<|start|>assistant<|channel|>final<|message|>hi",
        ),
    )
    generation, pieces = run(scripted, "<|start|>assistant to=functions.x")
    assert generation.stop_reason is StopReason.RETURN
    assert pieces[-1] == Piece(tokens.RETURN, True)


def test_a_stop_marker_in_the_text_ends_the_stream(scripted: str) -> None:
    Scripted.plan = (200, sse("<|channel|>final<|message|>done<|return|>", "junk after"))
    generation, pieces = run(scripted)
    assert generation.stop_reason is StopReason.RETURN
    assert pieces[-1] == Piece(tokens.RETURN, True)
    assert "junk" not in "".join(p.text for p in pieces)


def test_length_and_end_of_stream(scripted: str) -> None:
    Scripted.plan = (200, sse("abc", finish="length"))
    generation, _ = run(scripted)
    assert generation.stop_reason is StopReason.MAX_TOKENS
    # Neither a finish nor [DONE]: the server (or a proxy) dropped the stream mid-answer.
    Scripted.plan = (200, sse("abc", finish=None, done=False))
    with pytest.raises(StreamDroppedError, match="before the answer ended"):
        run(scripted)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            404,
            b'{"error": {"message": "The model gpt-oss-120b does not exist."}}',
            r"HTTP 404: The model gpt-oss-120b does not exist",
        ),
        (500, b"Internal Server Error", r"HTTP 500: Internal Server Error"),
        (400, b'{"detail": "bad prompt"}', r"HTTP 400: bad prompt"),
    ],
)
def test_http_errors(scripted: str, status: int, body: bytes, expected: str) -> None:
    Scripted.plan = (status, [(0.0, body)])
    with pytest.raises(ServerError, match=expected):
        run(scripted)


def test_malformed_event(scripted: str) -> None:
    Scripted.plan = (200, [(0.0, b"data: {not json\n\n")])
    with pytest.raises(ServerError, match="malformed event"):
        run(scripted)


def test_event_without_choices(scripted: str) -> None:
    Scripted.plan = (200, [(0.0, b'data: {"object": "text_completion"}\n\n')])
    with pytest.raises(ServerError, match="without choices"):
        run(scripted)


def test_error_event_mid_stream(scripted: str) -> None:
    chunks = [
        *sse("abc", finish=None, done=False),
        (0.0, b'data: {"error": {"message": "out of memory"}}\n\n'),
    ]
    Scripted.plan = (200, chunks)
    with pytest.raises(ServerError, match="out of memory"):
        run(scripted)


def test_timeout(scripted: str) -> None:
    Scripted.plan = (
        200,
        [(0.0, sse("a", finish=None, done=False)[0][1]), (None, b"data: [DONE]\n\n")],
    )
    # The stream ends only when the test says so: the error comes while it is still open.
    with pytest.raises(ServerError, match=r"did not answer within 0.5 s"):
        run(scripted, timeout=0.5)
    Scripted.released.set()


def test_connection_refused() -> None:
    port = free_port()  # nothing listens there any more
    with pytest.raises(ServerError, match="cannot connect") as info:
        run(f"http://127.0.0.1:{port}")
    assert info.value.hint and "--api-base" in info.value.hint


def test_cancel(scripted: str) -> None:
    Scripted.plan = (200, [(0.05, c) for _, c in sse(*"abcdefghij")])
    cancel = threading.Event()
    with OpenAIServerBackend(BackendConfig(api_base=scripted)) as backend:
        generation = backend.generate("<|start|>assistant", cancel=cancel)
        seen = []
        for piece in generation:
            seen.append(piece)
            if len(seen) == 2:
                cancel.set()
        assert generation.stop_reason is StopReason.CANCELLED
        assert len(seen) == 2
