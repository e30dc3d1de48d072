"""Reading the context each server serves, Ollama's num_ctx, the servers' overflow answers
and the estimate the servers' counts correct (lmc/backends/served.py, _overflow.py, _http.py).

The servers are the stand-ins of support.served_servers (each shape's source is cited there);
the overflow bodies below are the real servers' words, cited one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.loopback import serving_in_thread
from support.recorded_servers import SERVERS, serving
from support.served_servers import Stand, stand_in

from lmc.backends import BackendConfig, SamplingSettings, open_backend
from lmc.backends._overflow import overflow_in
from lmc.backends.served import Calibration, NumCtx, read_served
from lmc.errors import ServedContextOverflow, StreamDroppedError

# ------------------------------------------------------------------------ reading the size


@pytest.mark.parametrize(
    ("kind", "dialect", "size", "source"),
    [
        ("ollama", "ollama", 131072, "Ollama /api/show, the trained context; lmc sizes num_ctx"),
        ("ollama", "chat", 4096, "Ollama /api/ps"),
        ("lmstudio", "chat", 131072, "LM Studio /api/v0/models max_context_length; the model"),
        ("llama.cpp", "chat", 4096, "llama.cpp /props default_generation_settings.n_ctx"),
        ("vllm", "completions", 4096, "vLLM /v1/models max_model_len"),
    ],
)
def test_each_server_says_its_context(kind: str, dialect: str, size: int, source: str) -> None:
    plenty = 64 * 1024**3  # Ollama's num_ctx is capped by free memory: test_served_memory.py
    with stand_in(kind) as (record, _stand):
        served = read_served(BackendConfig(api_base=record.root), dialect, memory=lambda _r: plenty)
    assert served.size == size
    assert served.source.startswith(source)
    assert served.reason.startswith(f"{size:,} tokens (")


def test_ollama_v1_loads_the_model_to_read_its_size() -> None:
    """Not loaded: lmc loads it (an empty /api/generate) and reads /api/ps after."""
    with stand_in("ollama") as (record, stand):
        served = read_served(BackendConfig(api_base=record.root), "chat")
    paths = [path for path, _, _ in record.requests]
    assert paths.index("/api/generate") < len(paths) - 1 and paths[-1] == "/api/ps"
    assert stand.loaded == 4096 and served.size == 4096


def test_lm_studio_says_the_loaded_context_once_loaded() -> None:
    with stand_in("lmstudio", Stand(loaded=8192)) as (record, _stand):
        served = read_served(BackendConfig(api_base=record.root), "chat")
    assert (served.size, served.trained) == (8192, 131072)
    assert served.source == "LM Studio /api/v0/models loaded_context_length"


def test_a_server_that_says_nothing_gets_the_assumption_said_so() -> None:
    routes = {k: v for k, v in SERVERS["hosted"].items() if k != "/v1/models"}
    with serving(routes) as recorded:
        served = read_served(BackendConfig(api_base=recorded.root, model="gpt-oss-20b"), "chat")
    assert served.reason == (
        "131,072 tokens (gpt-oss's trained context, assumed: the server does not say)"
    )


def test_a_hosted_model_list_with_context_length_is_read() -> None:
    """OpenRouter's /v1/models names ``context_length`` (assembled: its documented field)."""
    listing = {"data": [{"id": "openai/gpt-oss-20b", "context_length": 131000}]}
    routes = {"/v1/models": lambda _b: (200, "application/json", [_json(listing)])}
    with serving(routes) as recorded:
        config = BackendConfig(api_base=recorded.root, model="openai/gpt-oss-20b")
        served = read_served(config, "chat")
    assert (served.size, served.source) == (131000, "/v1/models context_length")


def _json(body: Any) -> bytes:
    import json

    return json.dumps(body).encode()


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm"])
def test_the_backend_takes_the_served_size_and_context_still_wins(kind: str) -> None:
    with stand_in(kind) as (record, _stand):
        with open_backend(BackendConfig(api_base=record.root)) as backend:
            assert backend.context_size == 4096
        with open_backend(BackendConfig(api_base=record.root, context_size=16384)) as backend:
            assert (backend.context_size, backend.context_reason) == (
                16384,
                "16,384 tokens: as set",
            )


# --------------------------------------------------------------------------- Ollama num_ctx


def test_num_ctx_grows_in_a_few_large_steps_and_never_past_the_cap() -> None:
    sizes = NumCtx(65536)
    asked = [sizes.size_for(n) for n in (1000, 7000, 8192, 8193, 9000, 20000, 15000, 90000)]
    assert asked == [8192, 8192, 8192, 16384, 16384, 32768, 32768, 65536]
    assert NumCtx(4096).size_for(100) == 4096  # a --context below the first step


def test_every_native_request_names_num_ctx() -> None:
    prompt = "<|start|>user<|message|>" + "word " * 12000 + "<|end|><|start|>assistant"
    with (
        stand_in("ollama") as (record, stand),
        open_backend(BackendConfig(api_base=record.root)) as backend,
    ):
        for text in ("<|start|>user<|message|>hi<|end|><|start|>assistant", prompt):
            list(backend.generate(text, SamplingSettings(max_tokens=256)))
    assert stand.num_ctx == [8192, 16384]  # 15,000 tokens of words (and the answer's room)
    assert [b["options"]["num_ctx"] for b in record.bodies("/api/chat")] == stand.num_ctx


# ------------------------------------------------------------------------ overflow answers


@pytest.mark.parametrize(
    ("text", "body", "expected"),
    [
        # ggml-org/llama.cpp tools/server/server-context.cpp (ERROR_TYPE_EXCEED_CONTEXT_SIZE),
        # server-task.cpp server_task_result_error::to_json adding n_prompt_tokens and n_ctx.
        (
            "request (4476 tokens) exceeds the available context size (4096 tokens), try "
            "increasing it",
            {"error": {"code": 400, "type": "exceed_context_size_error",
                       "n_prompt_tokens": 4476, "n_ctx": 4096}},
            (4476, 4096),
        ),
        # llama.cpp before the counts were in the message (same type, counts beside it).
        (
            "the request exceeds the available context size, try increasing it",
            {"error": {"code": 400, "type": "exceed_context_size_error",
                       "n_prompt_tokens": 5860, "n_ctx": 4096}},
            (5860, 4096),
        ),
        # vllm/entrypoints/openai/serving_engine.py _validate_input (v0.10/0.11).
        (
            "This model's maximum context length is 32768 tokens. However, your request has "
            "65521 input tokens. Please reduce the length of the input messages.",
            None,
            (65521, 32768),
        ),
        # The same file's max_tokens check.
        (
            "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum "
            "context length is 4096 tokens and your request has 2778 input tokens "
            "(8000 > 4096 - 2778). None",
            None,
            (2778, 4096),
        ),
        # LM Studio 0.3.x/0.4 (Gitlawb/openclaude#353) and before (lmstudio-bug-tracker#546).
        (
            "The number of tokens to keep from the initial prompt is greater than the context "
            "length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context "
            "length, or provide a shorter input.",
            None,
            (13055, 4096),
        ),
        (
            "Trying to keep the first 111490 tokens when context the overflows. However, the "
            "model is loaded with context length of only 32768 tokens, which is not enough.",
            None,
            (111490, 32768),
        ),
        # Ollama, asked not to cut.
        ("prompt too long; exceeded max context length by 1200 tokens", None, (0, 0)),
        ("The model gpt-oss-120b does not exist.", None, None),
    ],
)  # fmt: skip
def test_each_servers_overflow_is_read(
    text: str, body: Any, expected: tuple[int, int] | None
) -> None:
    assert overflow_in(text, body) == expected


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "lmstudio"])
def test_an_overflow_answer_is_a_served_context_overflow(kind: str) -> None:
    prompt = "<|start|>user<|message|>" + "word " * 4000 + "<|end|><|start|>assistant"
    with (
        stand_in(kind) as (record, _stand),
        open_backend(BackendConfig(api_base=record.root, context_size=131072)) as backend,
        pytest.raises(ServedContextOverflow) as caught,
    ):
        list(backend.generate(prompt))
    assert caught.value.context_size == 4096
    assert caught.value.prompt_tokens > 4096
    assert "HTTP 400" in str(caught.value)
    assert "--context" in str(caught.value.hint)


# -------------------------------------------------------------------------- dropped streams


class _Cut(BaseHTTPRequestHandler):
    """Promises 1,000 bytes of answer and closes after a few (a proxy timing out)."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"text":"<|channel|>","index":0}]}\n\n')
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def _cutting() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Cut)
    with serving_in_thread(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_a_connection_closed_mid_answer_is_a_dropped_stream() -> None:
    with _cutting() as base:
        config = BackendConfig(api_base=base, api_style="completions", context_size=4096)
        with open_backend(config) as backend, pytest.raises(StreamDroppedError):
            list(backend.generate("<|start|>user<|message|>hi<|end|><|start|>assistant"))


@pytest.mark.parametrize("kind", ["ollama", "lmstudio", "llama.cpp", "vllm"])
def test_a_stream_without_its_end_is_a_dropped_stream(kind: str) -> None:
    with (
        stand_in(kind, Stand(drop_at=1)) as (record, _stand),
        open_backend(BackendConfig(api_base=record.root, context_size=4096)) as backend,
        pytest.raises(StreamDroppedError, match="before the answer ended"),
    ):
        list(backend.generate("<|start|>user<|message|>hi<|end|><|start|>assistant"))


# ------------------------------------------------------------------ the servers' own counts


def test_the_servers_counts_correct_the_estimate() -> None:
    calibration = Calibration()
    text = "x" * 4000  # 1,000 tokens by lmc's estimate
    assert calibration.count(text) == 1000
    calibration.observe(1000, 1300)
    calibration.observe(1400, 1820)
    assert calibration.ratio == pytest.approx(1.225)
    assert calibration.count(text) == 1225 and calibration.revision == 2
    assert calibration.cut is None


def test_a_count_far_below_or_stalled_is_a_cut_not_a_lesson() -> None:
    calibration = Calibration()
    calibration.observe(3000, 3100)
    ratio = calibration.ratio
    calibration.observe(4000, 2500)  # far below: the server cut the prompt
    assert calibration.cut is not None and calibration.cut[0] == 2500
    assert calibration.ratio == ratio
    calibration.cut = None
    calibration.observe(4300, 2520)  # grew by 300, the count by 20: cut again
    assert calibration.cut is not None and calibration.ratio == ratio


def test_a_count_of_only_what_the_cache_missed_is_ignored() -> None:
    """Some Ollama versions count only the tokens their cache did not hold (ollama/ollama
    #3427, #5370; PR #16428 put the cached ones back)."""
    calibration = Calibration()
    calibration.observe(3000, 3100)
    calibration.observe(3300, 169)
    assert calibration.cut is None and calibration.revision == 1


# ------------------------------------------------------------------- reading without delay


def test_the_served_reads_and_the_model_list_are_all_in_flight_at_once() -> None:
    """Opening a server backend sends its GETs (the four that say the context, the model
    list among them, which detect reads from there) at once: the stand-in answers none of
    them until all four are in, so reads sent one after another would each give up on the
    barrier (no timing measured: the barrier's deadline only bounds a failing run)."""
    barrier = threading.Barrier(4, timeout=30)
    seen: list[str] = []
    broken: list[str] = []
    listing = {"object": "list", "data": [{"id": "gpt-oss-20b", "max_model_len": 8192}]}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                broken.append(self.path)
            found = self.path == "/v1/models"
            body = _json(listing) if found else b"{}"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    root = f"http://127.0.0.1:{server.server_address[1]}"
    with serving_in_thread(server):
        config = BackendConfig(api_base=f"{root}/v1", api_style="completions")
        with open_backend(config) as backend:
            assert (backend.context_size, backend.context_reason) == (
                8192,
                "8,192 tokens (/v1/models max_model_len)",
            )
    assert broken == []
    assert seen.count("/v1/models") == 1  # the model list is read once, not again by detect


def test_a_malformed_api_base_raises_nothing_in_the_reading_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The context's GETs run in threads: a URL httpx refuses (``http://[::1``) must not end
    one of them with a traceback on the person's terminal (the request path says it once)."""
    import threading

    from lmc.backends.served import ServedAnswers

    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    answers = ServedAnswers(BackendConfig(api_base="http://[::1"))
    try:
        assert [answers.get(i) for i in range(4)] == [None, None, None, None]
    finally:
        answers.close()
    assert died == []


# ------------------------------------------------------------------ the GETs sent ahead


def _gets(record: Any) -> list[str]:
    return sorted(path for path, body, _ in record.requests if body is None)


def _all_in(record: Any, count: int) -> None:
    """Wait until the stand-in has ``count`` GETs (the reads run in threads)."""
    done = threading.Event()
    for _ in range(3000):
        if len(_gets(record)) >= count:
            return
        done.wait(0.01)
    raise AssertionError(f"the GETs did not arrive: {_gets(record)}")


FOUR = sorted(["/api/version", "/api/v0/models", "/props", "/v1/models"])


@pytest.fixture
def nothing_ahead() -> Iterator[None]:
    from lmc.backends.served import drop_ahead

    drop_ahead()
    yield
    drop_ahead()


@pytest.mark.usefixtures("nothing_ahead")
def test_gets_sent_ahead_are_what_the_backend_of_that_server_reads() -> None:
    from lmc.backends.served import read_ahead

    with stand_in("vllm") as (record, _stand):
        config = BackendConfig(api_base=record.root, api_style="completions")
        read_ahead(config)
        _all_in(record, 4)
        assert _gets(record) == FOUR  # sent before any backend exists
        with open_backend(config) as backend:
            assert backend.context_size == 4096
        assert _gets(record) == FOUR  # none sent again: the backend took them


@pytest.mark.usefixtures("nothing_ahead")
@pytest.mark.parametrize("other", ["address", "key"])
def test_gets_sent_ahead_elsewhere_or_with_another_key_are_not_used(
    other: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmc.backends.served import read_ahead

    monkeypatch.delenv("LMC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with stand_in("vllm") as (record, _stand), stand_in("vllm") as (second, _):
        config = BackendConfig(api_base=record.root, api_style="completions", api_key="k-one")
        read_ahead(config)
        _all_in(record, 4)
        if other == "address":
            config = BackendConfig(api_base=second.root, api_style="completions", api_key="k-one")
        else:
            config = BackendConfig(api_base=record.root, api_style="completions", api_key="k-two")
        with open_backend(config) as backend:
            assert backend.context_size == 4096
        asked = second if other == "address" else record
        keys = [headers.get("Authorization") for _p, body, headers in asked.requests if not body]
        assert keys[-4:] == [f"Bearer {config.api_key}"] * 4  # read anew, with its own key
        assert _gets(record) == (FOUR if other == "address" else sorted(FOUR * 2))


@pytest.mark.usefixtures("nothing_ahead")
def test_gets_dropped_ahead_are_not_taken() -> None:
    from lmc.backends.served import drop_ahead, read_ahead, take_ahead

    with stand_in("vllm") as (record, _stand):
        config = BackendConfig(api_base=record.root, api_style="completions")
        read_ahead(config)
        drop_ahead()
        assert take_ahead(config) is None
