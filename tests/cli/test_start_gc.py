"""``lmc run`` starts with the cyclic garbage collector paused (the start allocates objects
that all stay alive, so its passes would free nothing) and runs the turn with it on again,
the start's objects frozen out of its passes: seen from inside a real ``lmc run`` process
against a loopback server, at the head start and at the turn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.served_servers import stand_in

PROBE = """
import gc, sys
import lmc.cli.head_start as head_start, lmc.cli.oneshot as oneshot

def said(where, wrapped):
    def call(*args, **kwargs):
        print(f"GC {where} enabled={gc.isenabled()} frozen={gc.get_freeze_count() > 0}",
              file=sys.stderr, flush=True)
        return wrapped(*args, **kwargs)
    return call

head_start.launch_shell = said("start", head_start.launch_shell)
oneshot.run_turn = said("turn", oneshot.run_turn)
sys.argv = ["lmc", *sys.argv[1:]]
from lmc.cli.app import main
main()
"""


def test_the_collector_waits_for_the_start_and_runs_the_turn(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    with stand_in("llama.cpp") as (record, _stand):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, "run", "-y", "--sandbox", "off", "--max-steps", "1",
             "--api-base", record.root, "Run the 20 steps of task ZEBRA-42."],
            env={**os.environ, **lmc_env}, cwd=tmp_path, capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.startswith("GC ")]
    assert lines == [
        "GC start enabled=False frozen=False",
        "GC turn enabled=True frozen=True",
    ], done.stderr[-2000:]
