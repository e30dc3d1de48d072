"""Agent-loop overhead: the whole turn (parser, LMC mapping, assembly, storage) against the
backend's raw pieces, on the tiny model forced to emit the same long answer.

    PYTHONPATH=. .venv/bin/python scripts/bench_agent_loop.py [TOKENS]

Prints both throughputs and their ratio (the loop keeps this fraction of raw speed).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tiny_model(out: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_tiny_model", ROOT / "scripts" / "make_tiny_model.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_tiny_model"] = module
    spec.loader.exec_module(module)
    path: Path = module.write_tiny_model(out)
    return path


def main() -> None:
    from lmc.agent import Interpreter
    from lmc.backends import BackendConfig, open_backend
    from lmc.backends.replay import format_replay

    words = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    answer = "<|channel|>final<|message|>" + "word " * words + "<|return|>"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = _tiny_model(work / "tiny.gguf")
        replay = work / "replay.txt"
        replay.write_text(format_replay([answer, answer]), encoding="utf-8")
        config = BackendConfig(model=str(model), replay=str(replay), prefix_cache=False)
        backend = open_backend(config)
        with Interpreter(backend=backend, db_path=work / "c.db") as interpreter:
            prompt = interpreter._loop.transcript.render(interpreter._prefix())
            prompt = prompt.removesuffix("<|start|>assistant") + (
                "<|start|>user<|message|>go<|end|><|start|>assistant"
            )
            began = time.perf_counter()
            generation = backend.generate(prompt)
            raw = sum(1 for _ in generation)
            raw_time = time.perf_counter() - began
            raw_tokens = generation.completion_tokens

            interpreter.reset()
            began = time.perf_counter()
            chunks = sum(1 for _ in interpreter.chat("go", stream=True, display=False))
            loop_time = time.perf_counter() - began
        backend.close()
    raw_rate = raw_tokens / raw_time
    loop_rate = raw_tokens / loop_time
    print(f"raw backend : {raw} pieces in {raw_time:.3f}s ({raw_rate:,.0f} tok/s)")
    print(f"agent loop  : {chunks} chunks in {loop_time:.3f}s ({loop_rate:,.0f} tok/s)")
    print(f"ratio       : {loop_rate / raw_rate:.3f} of raw throughput")


if __name__ == "__main__":
    main()
