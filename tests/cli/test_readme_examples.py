"""Every command in the README's "Quick start" and "Using lmc" blocks (up to its first
subsection: voice, the sandbox, serve and MCP have their own tests) runs as written, with a
scripted model (the tiny GGUF driven by replay), in a real 80x24 terminal; a block that asks
is answered y. The few that need what a test cannot have (a 12 GB download, a GPU server, the
install itself) are listed with the reason, and the list must match the README exactly."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.replay import write_replay
from support.tmux import Pane

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

#: Lines not run here, and why (the test fails when the README's lines change).
NOT_RUN = {
    "sudo apt-get install -y python3-venv build-essential && python3 -m venv ~/.lmc && "
    '~/.lmc/bin/pip install . && ~/.lmc/bin/lmc run "What is 34 / 24? Use Python."': (
        "the install itself (root, apt and a 5-minute build)"
    ),
    "scripts/test": "the whole test suite, which this test is part of (CI runs it)",
    'CMAKE_ARGS="-DGGML_CUDA=on" ~/.lmc/bin/pip install --force-reinstall --no-cache-dir '
    "llama-cpp-python": "rebuilds llama.cpp for an NVIDIA GPU",
    '~/.lmc/bin/lmc run --model ollama:gpt-oss:20b "What is 34 / 24? Use Python."': (
        "needs Ollama serving gpt-oss"
    ),
    "lmc --model hf:ggml-org/gpt-oss-20b-GGUF": "downloads the 12 GB model",
    "lmc --api-base http://127.0.0.1:8000/v1": "needs a vLLM or llama.cpp server",
}

PLOT = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "import numpy as np\nx = np.linspace(0, 6.283, 50)\nplt.plot(x, np.sin(x))\n"
    "plt.savefig('sin.png')\nprint('saved sin.png')"
)
#: What the scripted model answers, by a piece of the example's line.
SCRIPTS = {
    "What is 34 / 24": [code("print(34 / 24)"), final("About 1.42.")],
    "What is 2**100": [code("print(2**100)"), final("It is 1267650600228229401496703205376.")],
    "biggest files": [code("import os\nprint(sorted(os.listdir('.'))[:3])"), final("Those.")],
    'run -y "..."': [code("print('ran without asking')"), final("Done.")],
    "--json": [code("print(6 * 7)"), final("Forty-two.")],
    "> answer.txt": [code("print('to the file')"), final("The answer went to the file.")],
    "--python": [code(PLOT), final("Plotted.")],
}


def _examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    lines: list[str] = []
    for section in ("## Quick start", "## Using lmc"):
        body = text[text.index(section) :].split("\n## ", 1)[0].split("\n### ", 1)[0]
        for block in re.findall(r"```bash\n(.*?)```", body, re.DOTALL):
            for line in block.splitlines():
                command = line.split("  #", 1)[0].strip()
                if command and not command.startswith("#"):
                    lines.append(command)
    return lines


def _shim(path: Path, target: str, env: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n{env}exec {target} "$@"\n')
    path.chmod(0o755)


@pytest.fixture
def home(tmp_path: Path, tiny_model: Path) -> Path:
    """A home as the README assumes it: lmc installed in ~/.lmc, a model file, own python."""
    home = tmp_path / "home"
    lmc = f"{shlex.quote(sys.executable)} -m lmc"
    _shim(home / ".lmc" / "bin" / "lmc", lmc, f"PYTHONPATH={ROOT} ")
    _shim(home / "bin" / "lmc", lmc, f"PYTHONPATH={ROOT} ")
    _shim(home / "my-env" / "bin" / "python", shlex.quote(sys.executable))
    (home / "models").mkdir()
    (home / "models" / "gpt-oss-20b-mxfp4.gguf").symlink_to(tiny_model)
    (home / "work").mkdir()
    return home


def _is_chat(line: str) -> bool:
    words = line.split()
    return words[0] == "lmc" and (len(words) == 1 or words[1].startswith("--"))


def _run_in_terminal(home: Path, line: str, replay: Path, tiny_model: Path, name: str) -> str:
    env = {
        "HOME": str(home),
        "PATH": f"{home / 'bin'}:/usr/bin:/bin",
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "LMC_MODEL": str(tiny_model),
        "LMC_REPLAY": str(replay),
        "TERM": "xterm-256color",
        "BROWSER": "true",
        "LMC_WORKDIR": str(home / "work"),
        # This home lies under /tmp, which the sandbox replaces with its own: ~/my-env would
        # not be there. A real home is (read-only), so the commands are the README's.
        "LMC_SANDBOX": "off",
    }
    script = f"cd {home / 'work'}; {line}; echo LMC-EXITED rc=$?; sleep 60"
    pane = Pane(f"lmc-readme-{os.getpid()}-{name}")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    pane.tmux("new-session", "-d", "-s", pane.session, "-x", "80", "-y", "24",
              f"env -i {exports} bash -c {shlex.quote(script)}")  # fmt: skip
    try:
        answered = 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            screen = pane.screen()
            if "LMC-EXITED" in screen:
                return screen
            if screen.count("Run this code?") > answered:
                answered += 1
                pane.type_line("y")
            elif re.search(r"^>\s*$", screen, re.MULTILINE) and _is_chat(line):
                pane.send("C-d")  # a chat example: it started; Ctrl-D ends it
            time.sleep(0.2)
        raise AssertionError(f"{line!r} did not finish:\n{pane.screen()}")
    finally:
        pane.kill()


def test_every_readme_example_runs_as_written(home: Path, tiny_model: Path, tmp_path: Path) -> None:
    examples = _examples()
    assert [line for line in examples if line in NOT_RUN] == list(NOT_RUN)
    ran = 0
    for index, line in enumerate(examples):
        if line in NOT_RUN:
            continue
        if line.startswith("lmc history |"):
            done = subprocess.run(
                ["bash", "-c", line],
                capture_output=True,
                text=True,
                env={"HOME": str(home), "PATH": f"{home / 'bin'}:/usr/bin:/bin",
                     "XDG_DATA_HOME": str(home / ".local" / "share"), "LMC_MODEL": str(tiny_model)},
                timeout=120,
                check=False,
            )  # fmt: skip
            assert "languages" in done.stdout and "Traceback" not in done.stderr, done.stderr
            ran += 1
            continue
        script = next((s for key, s in SCRIPTS.items() if key in line), [final("Hello.")])
        replay = write_replay(tmp_path / f"replay-{index}.txt", script)
        screen = _run_in_terminal(home, line, replay, tiny_model, str(index))
        assert "LMC-EXITED rc=0" in screen, f"{line!r}:\n{screen}"
        assert "Traceback" not in screen and "bug in lmc" not in screen, screen
        if "--python" in line:
            assert (home / "work" / "sin.png").is_file(), screen  # it really plotted
        ran += 1
    assert ran == len(examples) - len(NOT_RUN) >= 9
    assert (home / "work" / "sin.png").is_file()  # the plot example really plotted
    assert "The answer went to the file." in (home / "work" / "answer.txt").read_text()
