"""Prompt reuse: tokens evaluated over a 5-step tool loop, against re-evaluating every prompt.

    python scripts/bench_backend_reuse.py [--model M.gguf] [--steps 5]

Each step the (replayed) model calls the python tool, the tool's output is appended, and
the whole conversation is rendered again as the next prompt, as the agent loop does. lmc's
backend keeps the KV cache and the sampled token ids, so it evaluates only what is new; the
baseline re-tokenizes and evaluates the whole prompt every step (a fresh context each time).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_backend_pipeline import bench_model  # noqa: E402

PREFIX = (
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, "
    "final. Channel must be included for every message.<|end|>"
    "<|start|>developer<|message|># Instructions\n\nYou run code for the user.\n\n# Tools\n\n"
    "## python\n\nUse this tool to execute Python code. The code runs in a stateful Jupyter "
    "notebook; it answers with the output.\n<|end|>"
    "<|start|>user<|message|>Compute the first five squares, one at a time.<|end|>"
    "<|start|>assistant"
)


def step_completion(i: int) -> str:
    return (
        f"<|channel|>analysis<|message|>Square number {i}.<|end|>"
        "<|start|>assistant<|channel|>commentary to=python <|constrain|>code"
        f"<|message|>print({i} * {i})<|call|>"
    )


def tool_output(i: int) -> str:
    return (
        f"<|start|>python to=assistant<|channel|>commentary<|message|>{i * i}\n<|end|>"
        "<|start|>assistant"
    )


def main() -> int:
    from lmc.backends.base import BackendConfig, SamplingSettings
    from lmc.backends.llama import LlamaCppBackend
    from lmc.backends.replay import ReplayScript

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or bench_model(Path(tmp))
        config = BackendConfig(context_size=4096, seed=1, prefix_cache=False)
        steps = range(1, args.steps + 1)
        backend = LlamaCppBackend(
            model, config, replay=ReplayScript([step_completion(i) for i in steps])
        )
        baseline = LlamaCppBackend(model, config)
        prompt = PREFIX
        reused_tokens = full_tokens = 0
        reused_time = full_time = 0.0
        print(f"{'step':>4} {'prompt':>7} {'lmc evaluated':>14} {'baseline evaluated':>19}")
        for i in steps:
            started = time.perf_counter()
            generation = backend.generate(prompt)
            text = ""
            for piece in generation:
                if not text:
                    reused_time += time.perf_counter() - started  # time to first token
                text += piece.text
            # Baseline: a fresh context, the whole prompt evaluated, one token sampled.
            baseline._llm.reset()
            baseline._llm._ctx.kv_cache_clear()
            baseline._log.clear()
            started = time.perf_counter()
            full = baseline.generate(prompt, SamplingSettings(max_tokens=1))
            list(full)
            full_time += time.perf_counter() - started
            reused_tokens += generation.prompt_tokens_evaluated
            full_tokens += full.prompt_tokens_evaluated
            print(f"{i:>4} {generation.prompt_tokens:>7} {generation.prompt_tokens_evaluated:>14} "
                  f"{full.prompt_tokens_evaluated:>19}")  # fmt: skip
            prompt += text + tool_output(i)
        print(f"model: {model.name}, {args.steps} steps")
        rows = [
            ("baseline (whole prompt)", full_tokens, full_time),
            ("lmc (KV + token reuse)", reused_tokens, reused_time),
        ]
        print(f"{'':24} {'tokens evaluated':>16} {'ratio':>7} {'prompt time (s)':>16} {'ratio':>7}")
        for name, count, seconds in rows:
            token_ratio, time_ratio = count / full_tokens, seconds / full_time
            print(f"{name:24} {count:>16} {token_ratio:>7.3f} {seconds:>16.3f} {time_ratio:>7.3f}")
        backend.close()
        baseline.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
