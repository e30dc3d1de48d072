"""Issue 35: lmc's own memory does not follow what the code prints.

A block prints 100 MB (a million lines) in ``lmc run -y --replay``; lmc's peak resident size
(``getrusage(RUSAGE_SELF).ru_maxrss``, written at exit by a wrapper around lmc's entry point)
is compared with the same run printing one line. Before the views kept a bounded window, the
rich view grew by about 730 MiB and the plain one by about 470 MiB (and took minutes, being
quadratic); now each grows by tens of MiB. The bound asserted is generous: 150 MiB.
"""

from __future__ import annotations

import os
import pty
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.replay import write_replay

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024  # ru_maxrss is in KiB on Linux

#: lmc's own entry point, writing its peak resident size at exit.
MEASURED = """\
import atexit, os, resource

def _peak() -> None:
    with open(os.environ["LMC_PEAK_FILE"], "w") as out:
        out.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))

atexit.register(_peak)
from lmc.cli.app import main

main()
"""

BIG = "for i in range(1_000_000):\n    print('x' * 99)"  # 100 MB in a million lines
SMALL = "print('x' * 99)"


def _drain(fd: int) -> None:
    while True:
        try:
            if not os.read(fd, 1 << 16):
                return
        except OSError:
            return


def _peak_kib(tmp_path: Path, model: Path, code: str, env: dict[str, str], *, rich: bool) -> int:
    """Run the block in ``lmc run -y`` (rich: on a pseudo-terminal) and return lmc's peak."""
    name = f"{'rich' if rich else 'plain'}-{len(code)}"
    replay = write_replay(
        tmp_path / f"{name}.txt",
        [
            f"<|channel|>analysis to=python code<|message|>{code}<|call|>",
            "<|channel|>final<|message|>Done.<|return|>",
        ],
    )
    peak = tmp_path / f"{name}.peak"
    run_env = {**env, "LMC_PEAK_FILE": str(peak)}
    command = [sys.executable, "-m", "measured_lmc", "run", "-y", "-m", str(model)]
    command += ["--replay", str(replay), "go"]
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    if rich:
        master, slave = pty.openpty()
        reader = threading.Thread(target=_drain, args=(master,), daemon=True)
        reader.start()
        process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=run_env, cwd=work
        )
        try:
            assert process.wait(timeout=900) == 0
        finally:
            process.kill()
            process.wait()
            os.close(slave)
            reader.join(timeout=30)
            os.close(master)
    else:
        with (tmp_path / f"{name}.out").open("w") as out:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                env=run_env,
                cwd=work,
                timeout=900,
                check=False,
            )
        assert done.returncode == 0
        text = (tmp_path / f"{name}.out").read_text()
        assert "more lines hidden" in text or len(code) == len(SMALL)
    return int(peak.read_text())


@pytest.mark.parametrize("rich", [False, True], ids=["plain", "rich"])
def test_printing_100_mb_grows_lmc_by_tens_of_mib_not_hundreds(
    rich: bool, tiny_model: Path, tmp_path: Path, lmc_env: dict[str, str]
) -> None:
    (tmp_path / "measured_lmc.py").write_text(MEASURED)
    env = {**os.environ, **lmc_env, "PYTHONPATH": f"{ROOT}:{tmp_path}"}
    if rich:
        env = {k: v for k, v in env.items() if k != "NO_COLOR"}
        env.update(TERM="xterm-256color", COLUMNS="100", LINES="30")
    baseline = _peak_kib(tmp_path, tiny_model, SMALL, env, rich=rich)
    printed = _peak_kib(tmp_path, tiny_model, BIG, env, rich=rich)
    assert printed - baseline < 150 * MIB, (baseline // MIB, printed // MIB)


IMAGES = (
    "import os\nfrom IPython.display import Image, display\n"
    "for i in range(4):\n"
    "    display(Image(data=b'\\x89PNG' + os.urandom(32 * 2**20), format='png'))"
)


def test_four_32_mib_images_stay_out_of_the_conversation_database(
    tiny_model: Path, tmp_path: Path, lmc_env: dict[str, str]
) -> None:
    """The run shows the images; the database keeps a note for each, not 170 MiB."""
    replay = write_replay(
        tmp_path / "images.txt",
        [
            f"<|channel|>analysis to=python code<|message|>{IMAGES}<|call|>",
            "<|channel|>final<|message|>Done.<|return|>",
        ],
    )
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, **lmc_env, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "lmc", "run", "-y", "-m", str(tiny_model)]
    done = subprocess.run(
        [*command, "--replay", str(replay), "draw"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = Path(lmc_env["LMC_DATA_DIR"])
    stored = sum(path.stat().st_size for path in data.glob("conversations.db*"))
    assert stored < 4 * 2**20, stored
    with sqlite3.connect(data / "conversations.db") as db:
        rows = [content for (content,) in db.execute("SELECT content FROM messages")]
    notes = [row for row in rows if "an image of 32.0 MiB was shown to the user but not" in row]
    assert len(notes) == 4
