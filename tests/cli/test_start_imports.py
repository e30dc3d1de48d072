"""What `lmc run` loads into its own process for an answer without code: none of the heavy
modules its start-up work keeps out (scripts/bench_start.py measures the time; this test keeps
the reasons from coming back).

The server is the recorded vLLM raw-completions endpoint (support.recorded_openai cites its
shapes), answering at once with a final message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.recorded_common import ANSWER, Reply, sse
from support.recorded_openai import _vllm_text, vllm_raw
from support.recorded_servers import SERVERS, serving

ROOT = Path(__file__).resolve().parents[2]

#: Loaded only when code runs (the kernels' client), or never by the command line.
KEPT_OUT = (
    "jupyter_client",  # connected when the model begins a block
    "zmq",
    "trio",  # httpcore imports it whenever installed
    "httpx._main",  # httpx's own command line (click, pygments, rich's progress)
    "pygments",
    "pydantic",  # typer 0.29 validates options through it
    "IPython",
    "llama_cpp",  # a server does the model's work
    "asyncio",  # only the chat's prompt (prompt_toolkit) and `lmc serve` run a loop
    "httpx",  # an http:// server gets lmc's own client (lmc.backends._wire)
    "httpcore",
    "h11",
    "http.client",
    "email",
    "typer",  # a plain `lmc run` is read without it (lmc.cli.run_args)
)


def _final_answer(body: dict[str, Any] | None) -> Reply:
    if body and not body.get("stream"):
        return vllm_raw(body)  # lmc's one-token probe
    pieces = ["<|channel|>", "final", "<|message|>", ANSWER]
    events = [*map(_vllm_text, pieces), _vllm_text("", "stop")]
    return 200, "text/event-stream", sse(*events)


#: ``python -m lmc`` that writes, at exit, the modules really loaded (a blocked import leaves
#: ``None`` in sys.modules) as the last line of standard error.
RUN_AND_LIST = """
import atexit, runpy, sys
atexit.register(lambda: print(",".join(n for n, m in sys.modules.items() if m), file=sys.stderr))
runpy.run_module("lmc", run_name="__main__", alter_sys=True)
"""


def test_an_answer_without_code_loads_only_what_it_needs(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    routes = {**SERVERS["vllm"], "/v1/completions": _final_answer}
    with serving(routes) as recorded:
        argv = ["run", "-y", "--api-base", f"{recorded.root}/v1", "say hello"]
        done = subprocess.run(
            [sys.executable, "-c", RUN_AND_LIST, *argv],
            cwd=tmp_path,
            env={**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert ANSWER in done.stdout
    imported = set(done.stderr.strip().splitlines()[-1].split(","))
    assert "lmc.backends._wire" in imported and "lmc.cli.oneshot" in imported  # read right
    loaded = sorted(name for name in KEPT_OUT if name in imported)
    assert loaded == []
