"""Pipeline overhead: backend -> Harmony parser -> LMC chunks, against raw llama-cpp-python.

    python scripts/bench_backend_pipeline.py [--model M.gguf] [--tokens N] [--reps R]

Both sides run the same model and are forced (a logits processor) to emit the same tokens
through llama.cpp's sampler: the raw side with ``Llama.generate`` and llama-cpp-python's
own ``logits_processor``; the pipeline with lmc's replay backend, the streaming Harmony
parser and the LMC mapper (no display). Without ``--model`` a benchmark-size random
gpt-oss model (about 100 MB) is written to a temporary directory. Target: >= 97 %.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROMPT = (
    "<|start|>system<|message|>You are a benchmark.<|end|>"
    "<|start|>user<|message|>Write some code.<|end|><|start|>assistant"
)
BENCH_SHAPE = {"embd": 512, "heads": 8, "heads_kv": 4, "head_dim": 64, "layers": 6,
               "experts": 4, "ff_exp": 512}  # fmt: skip


def tiny_model_maker() -> Any:
    """scripts/make_tiny_model.py as a module (``Shape``, ``write_tiny_model``)."""
    spec = importlib.util.spec_from_file_location("mtm", ROOT / "scripts" / "make_tiny_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mtm"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def bench_model(directory: Path) -> Path:
    """A benchmark-size random gpt-oss GGUF (same generator as the tiny test model)."""
    maker = tiny_model_maker()
    path: Path = maker.write_tiny_model(directory / "bench.gguf", 0, maker.Shape(**BENCH_SHAPE))
    return path


def completion(n_tokens: int) -> str:
    body = "print('hello world')\n" * max(1, n_tokens // 8)
    return (
        "<|channel|>analysis<|message|>Let me write it.<|end|>"
        "<|start|>assistant<|channel|>commentary to=python <|constrain|>code"
        f"<|message|>{body}<|call|>"
    )


def run_raw(model: Path, text: str) -> tuple[float, int]:
    import llama_cpp
    import numpy as np

    llm = llama_cpp.Llama(str(model), n_ctx=4096, swa_full=True, seed=1, verbose=False)
    prompt = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    forced = llm.tokenize(text.encode(), add_bos=False, special=True)
    step = 0

    def force(_ids: Any, logits: Any) -> Any:
        out = np.full_like(logits, -np.inf)
        out[forced[min(step, len(forced) - 1)]] = 0.0
        return out

    started = time.perf_counter()
    for _token in llm.generate(
        prompt, temp=1.0, top_p=1.0, top_k=0, min_p=0.0,
        logits_processor=llama_cpp.LogitsProcessorList([force]),
    ):  # fmt: skip
        step += 1
        if step == len(forced):
            break
    elapsed = time.perf_counter() - started
    llm.close()
    return elapsed, len(forced)


def run_pipeline(model: Path, text: str) -> tuple[float, int, int]:
    from lmc.backends.base import BackendConfig
    from lmc.backends.llama import LlamaCppBackend
    from lmc.backends.replay import ReplayScript
    from lmc.harmony.parser import StreamParser
    from lmc.harmony.to_lmc import LmcMapper

    config = BackendConfig(context_size=4096, seed=1, prefix_cache=False)
    backend = LlamaCppBackend(model, config, replay=ReplayScript([text]))
    parser, mapper = StreamParser(), LmcMapper()
    chunks = 0
    started = time.perf_counter()
    generation = backend.generate(PROMPT)
    for piece in generation:
        for event in parser.feed(piece.text, piece.special):
            chunks += len(mapper.feed(event))
    for event in parser.finish():
        chunks += len(mapper.feed(event))
    elapsed = time.perf_counter() - started
    backend.close()
    return elapsed, generation.completion_tokens, chunks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or bench_model(Path(tmp))
        text = completion(args.tokens)
        raw_best = pipe_best = 0.0
        for _ in range(args.reps):
            seconds, n = run_raw(model, text)
            raw_best = max(raw_best, n / seconds)
            seconds, n, chunks = run_pipeline(model, text)
            pipe_best = max(pipe_best, n / seconds)
        print(f"model: {model.name}  forced tokens: {n}  LMC chunks: {chunks}")
        print(f"{'raw llama-cpp-python generate':34} {raw_best:10.1f} tok/s   1.000")
        ratio = pipe_best / raw_best
        print(f"{'lmc backend+parser+LMC chunks':34} {pipe_best:10.1f} tok/s   {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
