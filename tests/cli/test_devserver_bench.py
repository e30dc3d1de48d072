"""The lmc half of ``scripts/bench_devserver_vs_codex.py``, untimed: a dev server started in
the foreground by mistake is handed back as a job after the block timeout, curled, stopped
with the ``jobs`` function (or never stopped: lmc ends it when it exits), and ``lmc run -y``
with the sandbox on finishes with nothing left running, in any PID or network namespace.

The script's own fake model server plays gpt-oss's steps in lmc's dialect (/v1/completions
SSE, raw Harmony: the shapes are those lmc/backends/openai_server.py reads, assembled), and the
script counts what is left from outside. A second test shows those counts are not blind: a
"tool" that leaves a detached dev server in a network namespace of its own is caught by them.
No timing is asserted.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from support.sandbox_testing import wait_until

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_devserver_vs_codex.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_devserver_vs_codex", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("stop", [True, False], ids=["stopped-by-the-model", "left-to-lmc"])
def test_lmc_finishes_the_dev_server_task_with_nothing_left(
    short_tmpdir: Path, tmp_path: Path, stop: bool
) -> None:
    out = tmp_path / "figures.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [
        sys.executable, str(SCRIPT), "--lmc", f"{shlex.quote(sys.executable)} -m lmc",
        "--tools", "lmc", "--rounds", "1", "--no-warm-up", "--settle", "20", "--timeout", "300",
        "--tmp-root", str(short_tmpdir), "--out", str(out),
    ]  # fmt: skip
    if not stop:
        argv.append("--no-stop")
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = json.loads(out.read_text())["runs"]
    assert run["finished"], run["problems"]
    assert run["rc"] == 0 and not run["timed_out"]
    assert run["steps"] == ([0, 1, 2, 3] if stop else [0, 1, 2])
    # The counts saw the server while it ran: inside lmc's sandbox, on its own loopback.
    assert run["server_seen"] and run["listening"] >= 1
    assert run["left_later"] == [] and run["listeners_later"] == []
    assert list(short_tmpdir.iterdir()) == []  # the script's temp dir is gone


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_the_counts_catch_a_server_a_tool_leaves(tmp_path: Path) -> None:
    bench = _bench()
    tag = uuid.uuid4().hex[:12]
    port = bench.free_port()
    site = tmp_path / f"site-{tag}"
    site.mkdir()
    server = (
        f"setsid bwrap --unshare-net --dev-bind / / python3 -m http.server {port} "
        f"--bind 127.0.0.1 --directory {site} >/dev/null 2>&1 &"
    )
    # A "tool": starts the server detached, in a network namespace of its own, and stays
    # until it is killed (as a tool that exits without ending its children).
    tool = subprocess.Popen(["bash", "-c", f"{server} exec sleep 600"], start_new_session=True)
    watch = bench.Watch(tool.pid, tag)
    left: dict[int, str] = {}
    try:
        wait_until(lambda: bench.listeners(port), 60, "the planted server to listen")
        wait_until(lambda: watch.tagged, 60, "the watch to see the planted server")
        os.kill(tool.pid, signal.SIGKILL)
        tool.wait()
        watch.stop()
        left = bench.leftovers(watch, tag)
        assert any("http.server" in line for line in left.values()), left
        (where,) = bench.listeners(port)
        assert os.readlink("/proc/self/ns/net") not in where  # not the host's loopback: its own
        assert tool.pid not in left
    finally:
        watch.stop()
        bench.end_processes(list(left) or list(bench.leftovers(watch, tag)))
        if tool.poll() is None:
            os.kill(tool.pid, signal.SIGKILL)
            tool.wait()
    wait_until(lambda: not bench.listeners(port), 60, "the planted server to end")
    assert bench.leftovers(watch, tag) == {}
