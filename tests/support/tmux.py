"""lmc in a real terminal: a private tmux server per test, read with capture-pane.

Every wait has a deadline and the server is killed by the test (``kill``), which ends lmc.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from support.tmux_testing import ROOT, Pane

__all__ = ["ROOT", "Pane", "lmc_env", "start"]


def lmc_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment that keeps lmc's files under ``tmp_path``."""
    return {
        "PYTHONPATH": str(ROOT),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LMC_DATA_DIR": str(tmp_path / "data" / "lmc"),
        "TERM": "xterm-256color",
        "BROWSER": "true",
        **extra,
    }


def start(
    tmp_path: Path,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    redirect: str = "",
    width: int = 80,
    height: int = 24,
    module: str = "lmc",
) -> tuple[Pane, Path]:
    """``python -m lmc ARGS [REDIRECT]`` in a fresh tmux server, in ``tmp_path/work``
    (``module``: another entry point, such as a test's wrapper around lmc)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = lmc_env(tmp_path) if env is None else env
    command = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.quote(sys.executable),
            "-m",
            module,
            *(shlex.quote(arg) for arg in args),
            redirect,
            "; echo LMC-EXITED rc=$?; sleep 60",
        ]
    )
    pane = Pane(f"lmc-t-{os.getpid()}-{tmp_path.name}")
    pane.tmux(
        "new-session", "-d", "-s", pane.session, "-x", str(width), "-y", str(height),
        "-c", str(work), command,
    )  # fmt: skip
    return pane, work
