"""The CLI's edge with its streams, as a real process sees it (``python -m lmc``): input that
is not UTF-8 is one line for every command that reads it, and a reader that goes away ends
lmc quietly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.replay import write_replay

ROOT = Path(__file__).resolve().parents[2]
NOT_UTF8 = b"caf\xe9 \xff\xfe\n"


def _lmc(
    env: dict[str, str], *args: str | bytes, stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "lmc", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _one_line_not_utf8(result: subprocess.CompletedProcess[bytes], what: str) -> None:
    errors = result.stderr.decode()
    assert "Traceback" not in errors and "bug" not in errors, errors
    assert errors.splitlines()[0].endswith(f"{what} is not UTF-8 text (byte 0xe9)"), errors
    assert result.stdout == b""


def test_run_with_non_utf8_standard_input(lmc_env: dict[str, str]) -> None:
    result = _lmc(lmc_env, "run", "-", stdin=NOT_UTF8)
    assert result.returncode == 2
    _one_line_not_utf8(result, "standard input")


def test_run_with_a_non_utf8_prompt_argument(lmc_env: dict[str, str]) -> None:
    result = _lmc(lmc_env, "run", b"caf\xe9")
    assert result.returncode == 2
    _one_line_not_utf8(result, "the prompt")


def test_json_chat_with_non_utf8_standard_input(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path
) -> None:
    replay = write_replay(tmp_path / "r.txt", [final("unused")])
    result = _lmc(lmc_env, "--json", "-m", str(tiny_model), "--replay", str(replay), stdin=NOT_UTF8)
    assert result.returncode == 1
    _one_line_not_utf8(result, "standard input")


@pytest.mark.parametrize("command", ["parse", "render"])
def test_harmony_commands_with_non_utf8_standard_input(
    lmc_env: dict[str, str], command: str
) -> None:
    result = _lmc(lmc_env, "harmony", command, stdin=NOT_UTF8)
    assert result.returncode == 2
    assert result.stderr.decode() == ("lmc harmony: standard input is not UTF-8 text (byte 0xe9)\n")


def test_a_closed_pipe_ends_run_quietly(
    lmc_env: dict[str, str], tiny_model: Path, tmp_path: Path, short_tmpdir: Path
) -> None:
    """``lmc run --json ... | head -1``: the reader leaves while the code still runs."""
    flag = tmp_path / "reader-gone"
    wait_for_flag = (
        f"import os, time\nwhile not os.path.exists({str(flag)!r}):\n    time.sleep(0.02)\n"
        "print('after the reader left')"
    )
    replay = write_replay(tmp_path / "r.txt", [code(wait_for_flag), final("Done.")])
    tmp = short_tmpdir
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "lmc", "run", "--json", "-y", "-m", str(tiny_model)]
    child = subprocess.Popen(
        [*command, "--replay", str(replay), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    assert child.stdout is not None and child.stderr is not None
    try:
        assert child.stdout.readline().startswith(b"{")
        child.stdout.close()  # head -1 is done
        flag.touch()
        errors = child.stderr.read().decode()
        child.wait(120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
    assert errors == ""
    assert child.returncode == 1
    assert list(tmp.iterdir()) == []  # the kernels were closed on the way out


@pytest.mark.parametrize("args", [["--version"], ["harmony", "parse"], ["run", "hi"]])
def test_a_closed_standard_output_is_one_line(lmc_env: dict[str, str], args: list[str]) -> None:
    command = " ".join([sys.executable, "-m", "lmc", *args])
    result = subprocess.run(
        ["sh", "-c", f"exec {command} >&- </dev/null"],
        capture_output=True,
        env={**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)},
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.decode() == "lmc: error: standard output is closed\n"
