"""Whether lmc's llama.cpp backend really uses the GPU: the same model with every layer on
the GPU and with none, side by side, in the same process and build.

    python scripts/bench_gpu.py [--model M.gguf | --embd 2048 --layers 12 ...] [--tokens 128]

It prints what lmc's start-up check sees (the GPU found, whether the installed llama.cpp
offloads, the one-line warning ``lmc doctor`` would give), llama.cpp's own line saying how
many layers went to the GPU, and prompt and generation speed through
:class:`lmc.backends.llama.LlamaCppBackend` (the path ``lmc run`` takes) for
``gpu_layers=0`` and ``gpu_layers=-1``, with the ratio. Without a GPU build both rows run on
the CPU and the ratio is about 1: that is the point of the check.

The model is a random-weight gpt-oss GGUF from scripts/make_tiny_model.py (the size flags
make one big enough for the GPU to matter); the text it generates is noise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
PROMPT = "<|start|>user<|message|>" + "Tell me about the weather today. " * 24 + "<|end|>"


@dataclass
class Speed:
    layers: str
    prompt_tokens: int
    prompt_seconds: float
    generated: int
    generate_seconds: float

    @property
    def prompt_rate(self) -> float:
        return self.prompt_tokens / self.prompt_seconds

    @property
    def generate_rate(self) -> float:
        return self.generated / self.generate_seconds


@contextlib.contextmanager
def _captured_stderr(into: Path) -> Iterator[None]:
    """llama.cpp logs from C to file descriptor 2: point it at a file for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    with into.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _model(args: argparse.Namespace, directory: Path) -> Path:
    if args.model is not None:
        return Path(args.model)
    from bench_backend_pipeline import tiny_model_maker

    module = tiny_model_maker()
    shape = module.Shape(
        args.embd, args.heads, args.heads_kv, args.head_dim, args.layers, args.experts, args.ff_exp
    )
    path: Path = module.write_tiny_model(directory / "bench-gpu.gguf", 0, shape)
    return path


def _measure(model: Path, gpu_layers: int, tokens: int, log: Path) -> tuple[Speed, str]:
    from lmc.backends.base import BackendConfig, SamplingSettings
    from lmc.backends.llama import LlamaCppBackend

    config = BackendConfig(
        context_size=4096, seed=1, gpu_layers=gpu_layers, verbose=True, prefix_cache=False
    )
    with _captured_stderr(log):
        backend = LlamaCppBackend(model, config)
    offload = OFFLOADED.search(log.read_text(errors="replace"))
    where = f"{offload.group(1)}/{offload.group(2)} layers" if offload else "no offload line"
    try:
        with _captured_stderr(log):
            started = time.perf_counter()
            generation = backend.generate(PROMPT, SamplingSettings(max_tokens=tokens, seed=1))
            pieces = iter(generation)
            next(pieces)  # the prompt is evaluated before the first piece
            first = time.perf_counter()
            generated = 1 + sum(1 for _ in pieces)
            done = time.perf_counter()
    finally:
        backend.close()
    speed = Speed(
        "all (-1)" if gpu_layers else "none (0)",
        generation.prompt_tokens,
        first - started,
        generated,
        max(done - first, 1e-9),
    )
    return speed, where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a gpt-oss GGUF (default: a random one)")
    parser.add_argument("--tokens", type=int, default=128, help="tokens to generate")
    for name, default in (
        ("embd", 1024),
        ("heads", 16),
        ("heads_kv", 4),
        ("head_dim", 64),
        ("layers", 8),
        ("experts", 8),
        ("ff_exp", 1024),
    ):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    args = parser.parse_args()

    from lmc.backends import _llama_cpp
    from lmc.backends.gpu import cpu_only_warning, find_gpu

    gpu = find_gpu()
    offloads = _llama_cpp.supports_gpu_offload()
    print(f"GPU found: {gpu[0] if gpu else 'none'}")
    print(f"llama.cpp {_llama_cpp.version()} offloads to a GPU: {offloads}")
    print(f"lmc's warning: {cpu_only_warning(gpu, offloads) or '(none)'}")
    with tempfile.TemporaryDirectory() as tmp:
        model = _model(args, Path(tmp))
        print(f"model: {model.name}, {model.stat().st_size / 2**20:.0f} MiB")
        rows = [_measure(model, layers, args.tokens, Path(tmp) / "log") for layers in (0, -1)]
    print(f"\n{'gpu_layers':<12}{'on the GPU':>16}{'prompt tok/s':>16}{'generate tok/s':>16}")
    for speed, where in rows:
        print(
            f"{speed.layers:<12}{where:>16}{speed.prompt_rate:>16.0f}{speed.generate_rate:>16.0f}"
        )
    cpu, gpu_speed = rows[0][0], rows[1][0]
    print(
        f"{'ratio':<12}{'':>16}{gpu_speed.prompt_rate / cpu.prompt_rate:>15.1f}x"
        f"{gpu_speed.generate_rate / cpu.generate_rate:>15.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
