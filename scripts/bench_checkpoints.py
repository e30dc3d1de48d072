"""What checkpoints cost: snapshot time for 1,000 and 10,000 files, and per-block overhead.

For each size a git project of small text files in nested folders is made in a temp folder.
Snapshot times: the first snapshot (every file read), a snapshot with nothing changed (the
usual case: the model's code changed nothing), and one after 10 files changed. Per-block
overhead: a trivial shell block (``true``) run through a real kernel with and without the
checkpoint hooks around it (before: snapshot; after: snapshot and diff), interleaved so that
machine load hits both alike; medians and the ratio.

    python scripts/bench_checkpoints.py [--runs 15] [--sizes 1000,10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lmc.agent.checkpoints import Checkpointer  # noqa: E402
from lmc.agent.history import Entry, Transcript  # noqa: E402
from lmc.agent.storage import ConversationStore  # noqa: E402
from lmc.computer import Computer  # noqa: E402
from lmc.workspace.shadow import ShadowRepo  # noqa: E402


def make_project(root: Path, files: int) -> None:
    root.mkdir(parents=True)
    for i in range(files):
        folder = root / f"pkg{i % 20}" / f"mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.py").write_text(f"# file {i}\n" + "x = 1\n" * 20)
    (root / ".gitignore").write_text("*.log\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def snapshot_times(project: Path, shadow: Path, runs: int) -> tuple[float, float, float]:
    repo = ShadowRepo(project, shadow, max_files=100_000)
    first = timed(repo.snapshot)
    unchanged = statistics.median(timed(repo.snapshot) for _ in range(runs))
    changed: list[float] = []
    for run in range(runs):
        for i in range(10):
            folder = project / f"pkg{i % 20}" / f"mod{i % 7}"
            (folder / f"f{i}.py").write_text(f"# changed {run}\n")
        changed.append(timed(repo.snapshot))
    return first, unchanged, statistics.median(changed)


def block_overhead(project: Path, data: Path, runs: int) -> tuple[float, float]:
    store = ConversationStore(data / "bench.db")
    conversation = store.create("bench")
    transcript = Transcript([Entry({"role": "user", "type": "message", "content": "go"}, "")])
    store.append(conversation, transcript.entries[0].message, "")
    hooks = Checkpointer(
        store=lambda: store,
        conversation=lambda: conversation,
        transcript=transcript,
        workdir=lambda: project,
        root=data / "checkpoints",
    )
    with Computer(cwd=project, sandbox="off") as computer:

        def plain() -> None:
            list(computer.run("shell", "true"))

        def checked() -> None:
            hooks.before_block()
            list(computer.run("shell", "true"))
            hooks.after_block()

        plain()
        checked()  # warm: kernel started, first snapshot taken
        without: list[float] = []
        with_hooks: list[float] = []
        for _ in range(runs):
            without.append(timed(plain))
            with_hooks.append(timed(checked))
    store.close()
    return statistics.median(without), statistics.median(with_hooks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    print(f"git {git.stdout.split()[-1]}, {args.runs} runs, medians")
    with tempfile.TemporaryDirectory(prefix="lmc-bench-") as tmp:
        base = Path(tmp)
        print(f"{'files':>7}  {'first':>11}  {'unchanged':>11}  {'10 changed':>11}")
        for size in sizes:
            project = base / f"p{size}"
            make_project(project, size)
            first, unchanged, changed = snapshot_times(project, base / f"s{size}", args.runs)
            print(f"{size:>7,}  {ms(first)}  {ms(unchanged)}  {ms(changed)}")
        project = base / f"p{sizes[0]}"
        without, with_hooks = block_overhead(project, base / "data", args.runs)
        print(f"\nper block (shell `true`, {sizes[0]:,} files):")
        print(f"  without checkpoints {ms(without)}")
        print(f"  with checkpoints    {ms(with_hooks)}  ({with_hooks / without:.2f}x, "
              f"+{(with_hooks - without) * 1000:.1f} ms)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
