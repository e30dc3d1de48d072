"""Compaction through the raw-completions path (``/v1/completions``) with a small context.

A real HTTP server on loopback answers the way llama.cpp's server and vLLM stream a legacy
completion (OpenAI's "Create completion" with ``stream: true``: ``data: {"choices": [{"text",
"index", "finish_reason"}]}`` events, then ``data: [DONE]``; the stop token is hidden and
``finish_reason`` is ``"stop"``, as in tests/backends/test_openai_server.py). It answers lmc's
summary request (recognised by its own instructions) with a summary, and every other request
with the next scripted completion.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from lmc.agent import Interpreter
from lmc.agent.compaction import SUMMARY_INTRO
from lmc.backends import BackendConfig, open_backend
from lmc.computer import Computer
from lmc.messages import text_of

CONTEXT = 4096
RESERVE = 1024
ASK = "Summarise this conversation for the assistant to continue from"


class Server(BaseHTTPRequestHandler):
    script: ClassVar[list[str]] = []
    prompts: ClassVar[list[str]] = []
    summaries: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        prompt = body["prompt"]
        if ASK in prompt:
            Server.summaries.append(prompt)
            text = f"<|channel|>final<|message|>SUMMARY {len(Server.summaries)}: work so far."
        else:
            Server.prompts.append(prompt)
            text = Server.script.pop(0)
        events = [
            {"choices": [{"index": 0, "text": text, "finish_reason": None}]},
            {"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]},
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Server)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Server.script, Server.prompts, Server.summaries = [], [], []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def estimate(text: str) -> int:
    """The raw backend's own count for a server (about 4 bytes a token)."""
    return math.ceil(len(text.encode()) / 4)


def make(server: str, tmp_path: Path, computer: Computer, **kwargs: Any) -> Interpreter:
    # The raw dialect as set: no probe request (it would take a scripted answer).
    config = BackendConfig(api_base=server, context_size=CONTEXT, api_style="completions")
    backend = open_backend(config)
    return Interpreter(
        backend=backend, computer=computer, db_path=tmp_path / "c.db", auto_run=True, **kwargs
    )


def final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}"


def test_a_conversation_ten_times_the_context_completes(
    server: str, tmp_path: Path, computer: Computer
) -> None:
    turns = 40
    Server.script = [final(f"answer {n} " + "z" * 1800) for n in range(turns)]
    interpreter = make(server, tmp_path, computer)
    total = 0
    for n in range(turns):
        question = f"question {n} " + "q" * 2400
        new = interpreter.chat(question, display=False)
        assert text_of(new[-1]).startswith(f"answer {n} ")  # every turn gets its answer
        total += estimate(question) + estimate(text_of(new[-1]))
    assert total > 10 * CONTEXT
    # Every step kept the answer's room, and the model saw the summary once there was one.
    assert all(estimate(p) + RESERVE <= CONTEXT for p in Server.prompts)
    assert len(Server.summaries) >= 5
    assert SUMMARY_INTRO in Server.prompts[-1] and "SUMMARY" in Server.prompts[-1]
    assert "question 0 " not in Server.prompts[-1]
    assert f"question {turns - 1} " in Server.prompts[-1]
    # Each summary request is a Harmony conversation of its own, carrying the last summary.
    assert all(p.startswith("<|start|>system<|message|>") for p in Server.summaries)
    assert "functions" not in Server.summaries[-1]
    assert "Summary of what came before:\nSUMMARY" in Server.summaries[-1]
    # The stored conversation keeps everything, the summaries included; resuming sees them.
    cid = interpreter.conversation_id
    assert cid is not None
    stored = interpreter.store.load_stored(cid)
    users = [s for s in stored if s.message["role"] == "user"]
    assert len(users) == turns
    assert sum(1 for s in stored if s.meta and "summary_of" in s.meta) == len(Server.summaries)
    resumed = make(server, tmp_path, computer, conversation_id=cid)
    assert SUMMARY_INTRO in resumed._loop.prompt()
    resumed.close()
    interpreter.close()


def test_one_long_turn_folds_its_older_steps(
    server: str, tmp_path: Path, computer: Computer
) -> None:
    # Each step's code differs (its comment): twelve identical ones would be a loop, which the
    # loop guard ends at the fourth (lmc.agent.loop_guard).
    calls = [
        "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"
        + json.dumps({"code": f"printf 'step %.0s' $(seq 500)  # step {n}"})
        for n in range(12)
    ]
    Server.script = [*calls, final("all twelve done")]
    interpreter = make(server, tmp_path, computer)
    new = interpreter.chat("do twelve steps", display=False)
    assert new[-1]["content"] == "all twelve done"
    assert len(Server.prompts) == 13 and Server.summaries
    assert all(estimate(p) + RESERVE <= CONTEXT for p in Server.prompts)
    # The request itself was folded into the summary, which says so to the model.
    assert "do twelve steps" in Server.summaries[0]
    assert SUMMARY_INTRO in Server.prompts[-1]
    interpreter.close()


def test_compact_on_demand(server: str, tmp_path: Path, computer: Computer) -> None:
    Server.script = [final("one"), final("two"), final("three")]
    interpreter = make(server, tmp_path, computer)
    assert interpreter.compact() == "nothing to compact yet: the conversation is too short"
    interpreter.chat("first", display=False)
    interpreter.chat("second", display=False)
    said = interpreter.compact()
    assert "Summary of messages 1-" in said and "SUMMARY 1" in said
    interpreter.chat("third", display=False)
    assert SUMMARY_INTRO in Server.prompts[-1]
    assert "<|start|>user<|message|>first<|end|>" not in Server.prompts[-1]
    interpreter.close()


def test_without_compaction_a_step_is_never_sent_without_the_answers_room(
    server: str, tmp_path: Path, computer: Computer
) -> None:
    # Each step's code differs (its comment): twelve identical ones would be a loop, which the
    # loop guard ends at the fourth (lmc.agent.loop_guard).
    calls = [
        "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"
        + json.dumps({"code": f"printf 'step %.0s' $(seq 500)  # step {n}"})
        for n in range(12)
    ]
    Server.script = [*calls, final("never")]
    interpreter = make(server, tmp_path, computer, compaction=False)
    new = interpreter.chat("do twelve steps", display=False)
    assert all(estimate(p) + RESERVE <= CONTEXT for p in Server.prompts)
    assert len(Server.prompts) < 12 and not Server.summaries
    assert new[-1]["role"] == "computer"
    assert "1,024 kept for the answer" in text_of(new[-1])
    interpreter.close()


def test_after_a_compaction_the_model_sees_the_live_names_and_their_types(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kernel state (issue 31): the summary the model sees lists what its kernels hold."""
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "work").mkdir()
    code = "import numpy as np\ngrid = np.zeros((20, 30))\nnames = ['a', 'b', 'c']"
    call = "<|channel|>commentary to=functions.python <|constrain|>json<|message|>" + json.dumps(
        {"code": code}
    )
    Server.script = [call, final("made"), final("next"), final("after")]
    with Computer(workdir=tmp_path / "work") as own:  # its kernel keeps this conversation's state
        interpreter = make(server, tmp_path, own)
        interpreter.chat("make a grid", display=False)
        interpreter.chat("and then", display=False)
        said = interpreter.compact()
        interpreter.chat("go on", display=False)
        interpreter.close()
    assert "grid: ndarray 20×30" in Server.prompts[-1]  # what the model sees from now on
    assert "Live names in the kernels" in said
    assert "grid: ndarray 20×30" in said and "names: list of 3" in said
    assert "np: module numpy" in said
