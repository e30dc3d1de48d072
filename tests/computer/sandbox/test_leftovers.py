"""An lmc killed outright leaves its kernels' connection files (HMAC keys) behind; the next
lmc to start removes them, and never a live session's. The HTML tool's page, with the
sandbox's network off, carries a policy that fetches nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.sandbox_testing import Place

from lmc.computer import Computer
from lmc.computer.html import OFFLINE_CSP
from lmc.computer.runtime import default_runtime_dir, release_runtime_dir
from lmc.messages import text_of

ROOT = Path(__file__).resolve().parents[3]
KILLED = """
import os, signal, sys
from lmc.computer import Computer
computer = Computer(sandbox=sys.argv[1])
list(computer.run('python', 'print(1)'))
print(next(iter(computer._sessions.values())).connection_file, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("mode", ["workspace", "off"])
def test_a_killed_sessions_connection_files_go_at_the_next_start(
    mode: str, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = place.root / f"tmp-{mode}"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    done = subprocess.run(
        [sys.executable, "-c", KILLED, mode],
        cwd=place.work, env={**os.environ, "TMPDIR": str(base), "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = Path(done.stdout.strip())
    assert left.is_file() and "key" in left.read_text()  # what SIGKILL leaves behind
    live = default_runtime_dir()  # the next start
    try:
        assert not left.parent.parent.exists()
        assert live.exists()
        assert default_runtime_dir() != live and live.exists()  # a live one is kept
    finally:
        release_runtime_dir(live)


@pytest.mark.parametrize("network", [False, True])
def test_html_without_the_network_fetches_nothing(network: bool, place: Place) -> None:
    page = "<!DOCTYPE html><html><body><img src='http://127.0.0.1:9/?k=secret'></body></html>"
    with Computer(sandbox="workspace", network=network, workdir=place.work) as computer:
        chunks = [c for c in computer.run("html", page) if c.get("format") == "html"]
    document = text_of(chunks[0])
    if network:
        assert document == page
        return
    assert document.startswith('<!DOCTYPE html><meta http-equiv="Content-Security-Policy"')
    assert OFFLINE_CSP in document and document.endswith(page[len("<!DOCTYPE html>") :])
    for directive in OFFLINE_CSP.split(";"):
        assert "http" not in directive and "*" not in directive
    # what the terminal saves under outputs/ is that document
    from lmc.terminal.artifacts import ArtifactStore

    saved = ArtifactStore(place.root / "outputs").save_html(document).read_text()
    assert saved.index("Content-Security-Policy") < saved.index("<img")
    with Computer(sandbox="off", workdir=place.work) as computer:
        plain = [c for c in computer.run("html", page) if c.get("format") == "html"]
    assert plain[0]["content"] == page
