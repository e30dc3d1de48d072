"""The cost per token of sampling a call's arguments under the schema's grammar.

    python scripts/bench_grammar.py [--model M.gguf] [--runs 50] [--tokens 40]

A replay forces a call's header up to ``<|constrain|>json<|message|>``; then the model
samples ``--tokens`` tokens freely, once without and once with the grammar built from the
tool's JSON Schema (the same seeds). Printed side by side: milliseconds per sampled token
and the ratio, plus the one-time cost of the vocabulary's UTF-8 table. The default model is
the tiny test model (272 tokens of vocabulary); llama.cpp's grammar work grows with the
vocabulary, so pass a real gpt-oss GGUF with ``--model`` for figures that carry over.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"
PROMPT = (
    "<|start|>system<|message|>You are a test model.<|end|>"
    "<|start|>user<|message|>List the files.<|end|><|start|>assistant"
)
SCHEMAS = {
    "functions.shell": {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The code to run."}},
        "required": ["code"],
    }
}


def tiny_model(directory: Path) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("mtm", ROOT / "scripts" / "make_tiny_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mtm"] = module
    spec.loader.exec_module(module)
    path: Path = module.write_tiny_model(directory / "tiny.gguf")
    return path


def sample(backend: Any, seed: int, tokens: int, grammar: bool) -> tuple[float, int]:
    """(seconds spent sampling after the header, tokens sampled there)."""
    from lmc.backends.base import SamplingSettings
    from lmc.backends.replay import ReplayScript

    backend.replay = ReplayScript([HEADER])
    settings = SamplingSettings(
        seed=seed, argument_schemas=SCHEMAS if grammar else None, max_tokens=10_000
    )
    generation = backend.generate(PROMPT, settings)
    n_header = len(backend._tokenize(HEADER.encode()))
    pieces = iter(generation)
    started: float | None = None
    first = 0
    for _piece in pieces:
        done = generation.completion_tokens
        if started is None:
            if done >= n_header:  # the header's last token: sampling is free from here
                started, first = time.perf_counter(), done
            continue
        if done - first >= tokens:
            break
    elapsed = time.perf_counter() - (started or time.perf_counter())
    close = getattr(pieces, "close", None)
    if close is not None:
        close()
    return elapsed, generation.completion_tokens - first


def main() -> int:
    from lmc.backends.base import BackendConfig
    from lmc.backends.llama import LlamaCppBackend

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or tiny_model(Path(tmp))
        config = BackendConfig(context_size=2048, prefix_cache=False, threads=1)
        backend = LlamaCppBackend(model, config)
        started = time.perf_counter()
        backend._utf8_filter()
        table = time.perf_counter() - started
        totals = {False: [0.0, 0], True: [0.0, 0]}
        for seed in range(args.runs):
            for grammar in (False, True):
                seconds, n = sample(backend, seed, args.tokens, grammar)
                totals[grammar][0] += seconds
                totals[grammar][1] += n
        backend.close()
    free = totals[False][0] / max(totals[False][1], 1) * 1000
    constrained = totals[True][0] / max(totals[True][1], 1) * 1000
    print(f"{'':28} {'free':>10} {'grammar':>10}")
    print(f"{'ms per sampled token':28} {free:>10.3f} {constrained:>10.3f}")
    print(f"{'tokens sampled':28} {totals[False][1]:>10} {totals[True][1]:>10}")
    print(f"grammar / free: {constrained / free:.2f}x; UTF-8 table (once): {table * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
