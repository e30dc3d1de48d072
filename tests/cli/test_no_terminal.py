"""No terminal (cron, CI, setsid) and no -y: lmc stops before the first block runs, with one
line and a non-zero exit; a run whose answer needs no block is not refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.cli_replays import code, final

ROOT = Path(__file__).resolve().parents[2]


def _lmc(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """lmc in a new session: it has no controlling terminal, as under cron."""
    return subprocess.run(
        [sys.executable, "-m", "lmc", *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT,
        start_new_session=True,
        timeout=120,
        check=False,
    )


def test_a_block_without_a_terminal_stops_the_run_in_one_line(
    lmc_env: dict[str, str], tiny_model: Path, replay: object, tmp_path: Path
) -> None:
    target = tmp_path / "made.txt"
    path = replay(code(f"open({str(target)!r}, 'w').write('x')"), final("Made."))  # type: ignore[operator]
    result = _lmc(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "make it")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "lmc: error: a block needs your confirmation and there is no terminal to ask: "
        "pass -y to run it without asking (it stays contained by the sandbox), or run lmc "
        "where it can ask"
    ]
    assert not target.exists()
    assert "Made." not in result.stdout


def test_json_chat_without_a_terminal_stops_too(
    lmc_env: dict[str, str], tiny_model: Path, replay: object, tmp_path: Path
) -> None:
    target = tmp_path / "made.txt"
    path = replay(code(f"open({str(target)!r}, 'w').write('x')"), final("Made."))  # type: ignore[operator]
    args = ("--json", "-m", str(tiny_model), "--replay", str(path))
    result = _lmc(lmc_env, *args, stdin="make it\nand again\n")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and "no terminal to ask" in result.stderr
    assert not target.exists()


def test_an_answer_without_code_needs_no_terminal(
    lmc_env: dict[str, str], tiny_model: Path, replay: object
) -> None:
    path = replay(final("Just words."))  # type: ignore[operator]
    result = _lmc(lmc_env, "run", "-m", str(tiny_model), "--replay", str(path), "say hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Just words.\n\n"
