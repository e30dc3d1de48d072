"""The snapshots are out of the code's reach: they live in lmc's data directory (which the
sandbox hides, lmc_private_dirs) and are taken by lmc itself, outside the sandbox. Code in the
``workspace`` sandbox that tries to overwrite them fails, and undo still restores the files;
the same attempt with the sandbox off succeeds (checked from outside)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter

from lmc.computer import Computer
from lmc.messages import text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"


def tamper(store: Path) -> str:
    """Python that changes a project file, then overwrites every file of the snapshot store."""
    code = (
        "import pathlib\n"
        "open('notes.txt', 'w').write('changed by the model\\n')\n"
        "done = 0\n"
        "try:\n"
        f"    for p in pathlib.Path({str(store)!r}).rglob('*'):\n"
        "        if p.is_file():\n"
        "            p.write_text('tampered')\n"
        "            done += 1\n"
        "    print('TAMPERED', done) if done else print('NOT FOUND')\n"
        "except OSError as exc:\n"
        "    print('BLOCKED', type(exc).__name__)\n"
    )
    return f"<|channel|>analysis to=python code<|message|>{code}<|call|>"


@pytest.fixture
def visible_data(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """lmc's data directory where sandboxed code can see it, as ~/.local/share is (under
    /tmp it would be behind the sandbox's private /tmp): in /var/tmp, removed after."""
    data = Path(tempfile.mkdtemp(prefix="lmc-data-", dir="/var/tmp"))
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    try:
        yield data
    finally:
        shutil.rmtree(data, ignore_errors=True)


@pytest.mark.parametrize("sandbox", ["workspace", "off"])
def test_code_cannot_tamper_with_the_snapshots_in_the_sandbox(
    make_interpreter: MakeInterpreter, tmp_path: Path, visible_data: Path, sandbox: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("original\n")
    store = visible_data / "lmc" / "checkpoints"
    with Computer(cwd=project, sandbox=sandbox) as computer:
        interpreter, _ = make_interpreter(
            [tamper(store), FINAL.format("done")], computer=computer, auto_run=True
        )
        messages = interpreter.chat("go", display=False)
        output = "".join(text_of(m) for m in messages if m["type"] == "console")
        head = next(store.rglob("refs/lmc/head"))
        if sandbox == "off":
            assert "TAMPERED" in output
            assert head.read_text() == "tampered"  # seen from outside: the store is ruined
            return
        # Hidden (the sandbox hides lmc's own data) or read-only: either way out of reach.
        assert "BLOCKED" in output or "NOT FOUND" in output, output
        assert head.read_text() != "tampered"
        files = [m["content"] for m in messages if m["type"] == "files"]
        assert files == [[{"path": "notes.txt", "change": "modified", "added": 1, "removed": 1}]]
        interpreter.undo()
        assert (project / "notes.txt").read_text() == "original\n"
        assert json.dumps(interpreter.messages) == "[]"
