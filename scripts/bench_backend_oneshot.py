"""One-shot start: time to first token of a fresh backend with the prefix state cache, vs without.

    python scripts/bench_backend_oneshot.py [--model M.gguf] [--reps 3]

A one-shot ``lmc run`` starts a new process, loads the model and evaluates the whole prompt.
With the prefix state cache the system and developer messages (here a long tool list) are
loaded from disk instead of evaluated. Each measurement builds a new backend (as a new process
would) and times ``generate()`` to the first piece; model loading is not counted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_backend_pipeline import bench_model  # noqa: E402

TOOLS = "".join(
    f"// Tool number {i}: does thing {i} to the file system and reports back.\n"
    f"type tool_{i} = (_: {{ path: string, recursive?: boolean, depth?: number }}) => any;\n"
    for i in range(15)
)
PROMPT = (
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Reasoning: low\n\n# Valid channels: analysis, commentary, final.<|end|>"
    f"<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n"
    f"namespace functions {{\n{TOOLS}}} // namespace functions<|end|>"
    "<|start|>user<|message|>What is in this directory?<|end|><|start|>assistant"
)


def first_token_seconds(model: Path, cache: Path, enabled: bool) -> tuple[float, int, int]:
    from lmc.backends.base import BackendConfig, SamplingSettings
    from lmc.backends.llama import LlamaCppBackend

    config = BackendConfig(context_size=4096, seed=1, prefix_cache=enabled)
    backend = LlamaCppBackend(model, config, cache_dir=cache)
    started = time.perf_counter()
    generation = backend.generate(PROMPT, SamplingSettings(max_tokens=1))
    next(iter(generation))
    seconds = time.perf_counter() - started
    list(generation)
    backend.close()
    return seconds, generation.prompt_tokens, generation.prompt_tokens_evaluated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or bench_model(Path(tmp))
        cache = Path(tmp) / "prefix-states"
        first_token_seconds(model, cache, True)  # writes the prefix state (the first run)
        cold, warm = [], []
        for _ in range(args.reps):
            seconds, total, evaluated_cold = first_token_seconds(model, cache, False)
            cold.append(seconds)
            seconds, total, evaluated_warm = first_token_seconds(model, cache, True)
            warm.append(seconds)
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"model: {model.name}, prompt {total} tokens")
        print(f"{'':30} {'evaluated':>9} {'first token (s)':>16} {'ratio':>7}")
        print(f"{'without prefix state cache':30} {evaluated_cold:>9} {c:>16.3f} {1:>7.3f}")
        print(f"{'with prefix state cache':30} {evaluated_warm:>9} {w:>16.3f} {w / c:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
