"""Per-step cost of a long session: Python overhead at small and large context, and bytes
tokenized over a tool loop, against a baseline checkout of lmc, side by side.

    python scripts/bench_long_session.py [--steps 30] [--baseline main] [--small 1000]
        [--large 60000] [--output 1000]

Each step the (replayed, tiny) model calls the python tool and the computer answers with
``--output`` characters, as in a long agent session. Two measurements, for this tree and for
``--baseline`` (a git ref, exported to a temporary directory and run in a subprocess):

- per-step Python overhead: a stored conversation with about ``--small`` and ``--large``
  tokens of history is resumed and 10 tool steps are run; a step's overhead is the CPU time
  of the thread that runs the loop less the part spent inside llama.cpp (evaluating and
  sampling; ``threads=1`` keeps that in the same thread), the median over the steps after
  the first (which evaluates the resumed prompt once). CPU time, not wall time, so that other
  processes on a shared machine do not show up as overhead;
- bytes tokenized over a ``--steps``-step loop from an empty conversation, against the size
  of the final prompt.

The computer is a stand-in that prints the output at once: kernels are not what is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lmc.messages import Chunk, console_end, console_output, console_start

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("LMC_BENCH_ROOT") or str(ROOT))
sys.path.insert(1, str(ROOT / "scripts"))

OVERHEAD_STEPS = 10


def call(i: int) -> str:
    return (
        f"<|channel|>analysis<|message|>Step {i}: look at the next part.<|end|>"
        "<|start|>assistant<|channel|>analysis to=python code"
        f"<|message|>print(data[{i}])<|call|>"
    )


FINAL = "<|channel|>final<|message|>Done.<|return|>"


class StubComputer:
    """Answers every run with the same ``size`` characters of output, at once."""

    def __init__(self, size: int) -> None:
        line = "0123456789abcdefghijklmnopqrstuvwxyz " * 3 + "\n"
        self.text = (line * (size // len(line) + 1))[:size]
        self.runs: list[float] = []  # when each run was asked for
        self.model_at_run: list[float] = []
        self.backend: Any = None

    def run(self, language: str, code: str) -> Iterable[Chunk]:
        self.runs.append(time.thread_time())
        self.model_at_run.append(self.backend.model_seconds)
        yield console_start()
        yield console_output(self.text)
        yield console_end()

    def interrupt(self) -> None:
        pass


def timed_backend(model: Path, context: int, completions: list[str]) -> Any:
    """A LlamaCppBackend that adds up the time inside llama.cpp and the bytes it tokenizes."""
    from lmc.backends.base import BackendConfig
    from lmc.backends.llama import LlamaCppBackend
    from lmc.backends.replay import ReplayScript

    class Timed(LlamaCppBackend):
        model_seconds = 0.0
        tokenized_bytes = 0

        def _tokenize(self, data: bytes) -> list[int]:
            self.tokenized_bytes += len(data)
            return super()._tokenize(data)

        def _sampler(self, *args: Any, **kwargs: Any) -> Any:
            inner = super()._sampler(*args, **kwargs)
            backend = self

            class Sampler:
                def sample(self, ctx: Any, idx: int) -> int:
                    started = time.thread_time()
                    try:
                        return int(inner.sample(ctx, idx))
                    finally:
                        backend.model_seconds += time.thread_time() - started

                def close(self) -> None:
                    inner.close()

            return Sampler()

    config = BackendConfig(context_size=context, seed=1, prefix_cache=False, threads=1)
    backend = Timed(model, config, replay=ReplayScript(completions))
    evaluate = backend._llm.eval

    def timed_eval(tokens: Any) -> Any:
        started = time.thread_time()
        try:
            return evaluate(tokens)
        finally:
            backend.model_seconds += time.thread_time() - started

    backend._llm.eval = timed_eval
    return backend


def prefill(db: Path, history_tokens: int, output: str) -> str:
    """A stored conversation of about ``history_tokens`` bytes of Harmony text (the tiny
    model's vocabulary is bytes); returns its id."""
    from lmc.agent.history import tool_result_harmony, user_harmony
    from lmc.agent.storage import ConversationStore

    with ConversationStore(db) as store:
        conversation = store.create("long")
        size = 0
        turn = 0
        while size < history_tokens:
            question = f"Question {turn}: what is in part {turn}?"
            store.append(
                conversation,
                {"role": "user", "type": "message", "content": question},
                user_harmony(question),
            )
            call_text = (
                "<|start|>assistant<|channel|>analysis to=python code"
                f"<|message|>print(data[{turn}])<|call|>"
            )
            store.append(
                conversation,
                {"role": "assistant", "type": "code", "format": "python", "content": "print()"},
                call_text,
            )
            result = tool_result_harmony("python", "analysis", output)
            store.append(
                conversation,
                {"role": "computer", "type": "console", "format": "output", "content": output},
                result,
            )
            answer = f"<|start|>assistant<|channel|>final<|message|>Part {turn} done.<|end|>"
            store.append(
                conversation,
                {"role": "assistant", "type": "message", "content": f"Part {turn} done."},
                answer,
            )
            size += len((user_harmony(question) + call_text + result + answer).encode())
            turn += 1
        return conversation


def run_turn(
    model: Path, db: Path, conversation: str | None, *, steps: int, output: int, context: int
) -> dict[str, Any]:
    from lmc.agent import Interpreter

    backend = timed_backend(model, context, [call(i) for i in range(steps)] + [FINAL])
    computer = StubComputer(output)
    computer.backend = backend
    interpreter = Interpreter(
        backend=backend,
        computer=computer,
        db_path=db,
        conversation_id=conversation,
        auto_run=True,
        max_steps=steps + 1,
    )
    prompts: list[int] = []
    generate = backend.generate

    def recording(prompt: str, *args: Any, **kwargs: Any) -> Any:
        prompts.append(len(prompt.encode()))
        return generate(prompt, *args, **kwargs)

    backend.generate = recording
    started = time.perf_counter()
    for _chunk in interpreter.chat("Go through the parts.", stream=True, display=False):
        pass
    total = time.perf_counter() - started
    context_tokens = len(backend._log.ids)
    interpreter.close()
    backend.close()
    walls = [b - a for a, b in zip(computer.runs, computer.runs[1:], strict=False)]
    models = [b - a for a, b in zip(computer.model_at_run, computer.model_at_run[1:], strict=False)]
    overheads = [w - m for w, m in zip(walls, models, strict=True)]
    return {
        "total": total,
        "overhead": statistics.median(overheads) if overheads else 0.0,
        "tokenized_bytes": backend.tokenized_bytes,
        "final_prompt_bytes": prompts[-1] if prompts else 0,
        "context_tokens": context_tokens,
    }


def bench_model(directory: Path) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("mtm", ROOT / "scripts" / "make_tiny_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mtm"] = module
    spec.loader.exec_module(module)
    path: Path = module.write_tiny_model(directory / "tiny.gguf")
    return path


def measure(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        os.environ["LMC_CACHE_DIR"] = str(directory / "cache")
        model = bench_model(directory)
        output = StubComputer(args.output).text
        context = args.large + 40_000
        for name, history in (("small", args.small), ("large", args.large)):
            db = directory / f"{name}.db"
            conversation = prefill(db, history, output)
            out[name] = run_turn(
                model, db, conversation, steps=OVERHEAD_STEPS, output=args.output, context=context
            )
        out["loop"] = run_turn(
            model,
            directory / "loop.db",
            None,
            steps=args.steps,
            output=args.output,
            context=args.steps * 2000 + 8192,
        )
    return out


def baseline(ref: str, argv: list[str]) -> dict[str, Any]:
    """Run this script's measurements on ``ref``'s lmc, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "LMC_BENCH_ROOT": tmp, "PYTHONPATH": tmp}
        result = subprocess.run(
            [sys.executable, __file__, "--inner", *argv],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def rows(name: str, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    small, large, loop = data["small"], data["large"], data["loop"]
    yield "context tokens (small / large)", f"{small['context_tokens']} / {large['context_tokens']}"
    yield "per-step overhead, small", f"{small['overhead'] * 1000:.1f} ms"
    yield "per-step overhead, large", f"{large['overhead'] * 1000:.1f} ms"
    yield "ratio large / small", f"{large['overhead'] / small['overhead']:.2f}"
    yield "bytes tokenized over the loop", f"{loop['tokenized_bytes']:,}"
    yield "final prompt bytes", f"{loop['final_prompt_bytes']:,}"
    ratio = loop["tokenized_bytes"] / max(loop["final_prompt_bytes"], 1)
    yield "tokenized / final prompt", f"{ratio:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=60_000)
    parser.add_argument("--output", type=int, default=1000)
    parser.add_argument("--baseline", default="main", help="git ref to compare with ('' for none)")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(measure(args)))
        return 0
    argv = [
        f"--steps={args.steps}",
        f"--small={args.small}",
        f"--large={args.large}",
        f"--output={args.output}",
    ]
    ours = measure(args)
    theirs = baseline(args.baseline, argv) if args.baseline else None
    header = f"{'':34} {'this tree':>18}"
    if theirs is not None:
        header += f" {args.baseline + ' (full)':>18}"
    print(header)
    baseline_rows = dict(rows(args.baseline, theirs)) if theirs is not None else {}
    for label, value in rows("this tree", ours):
        line = f"{label:34} {value:>18}"
        if theirs is not None:
            line += f" {baseline_rows[label]:>18}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
