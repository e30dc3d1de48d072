"""Files git cannot take into a checkpoint are left out with a note, not in silence: a tree
deeper than PATH_MAX (4,096 bytes) made from inside the sandbox with ``os.chdir`` in a loop,
and a name git refuses to store (``.GIT/x``). The rest is still snapshotted and undone, and
undo says exactly why it leaves those as they are."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter, python_call

from lmc.computer import Computer
from lmc.messages import Chunk, text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"
DEEP = (
    "import os\n"
    "top = os.getcwd()\n"
    "os.makedirs('.GIT', exist_ok=True)\n"
    "open('.GIT/x', 'w').write('refused name\\n')\n"
    "for _ in range(25):\n"
    "    os.mkdir('d' * 200)\n"
    "    os.chdir('d' * 200)\n"
    "open('deepfile', 'w').write('deep\\n')\n"
    "print('DEPTH', len(os.getcwd()))\n"
    "os.chdir(top)\n"
    "open('notes.txt', 'w').write('overwritten\\n')\n"
)


@pytest.fixture
def place(tmp_path: Path) -> Iterator[tuple[Path, Computer]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\n")
    try:
        with Computer(cwd=project, sandbox="workspace") as computer:
            yield project, computer
    finally:
        shutil.rmtree(project)  # descriptor-based: removes the deep tree too


def _said(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("type") == "message")


def test_a_tree_deeper_than_path_max_is_left_out_with_a_note(
    make_interpreter: MakeInterpreter, place: tuple[Path, Computer]
) -> None:
    project, computer = place
    interpreter, _ = make_interpreter(
        [python_call(DEEP), FINAL.format("done")], computer=computer, auto_run=True
    )
    chunks = list(interpreter.chat("go deep", stream=True, display=False))
    output = "".join(text_of(c) for c in chunks if c.get("type") == "console")
    assert int(output.split("DEPTH")[1].split()[0]) > 4096, output
    files = [c["content"] for c in chunks if c["type"] == "files" and "content" in c]
    assert files == [[{"path": "notes.txt", "change": "modified", "added": 1, "removed": 1}]]
    said = _said(chunks)
    shown = "/".join(["d" * 40] * 3) + "/..."
    too_long = "its path is longer than the system allows (4,096 bytes)"
    assert f"{shown} left out of checkpoints: git could not open it: {too_long}" in said, said
    assert ".GIT/x left out of checkpoints: git cannot store that name" in said, said
    interpreter.undo()
    assert (project / "notes.txt").read_text() == "alpha\n"
    assert (project / ".GIT" / "x").read_text() == "refused name\n"
    report = interpreter.last_undo
    assert report is not None
    assert any(p.startswith(shown) and too_long in p for p in report.problems), report.problems
    assert any(p.startswith(".GIT/x: left out") for p in report.problems), report.problems
    # the deep file is still there (reached with a descriptor walk, as no path can)
    fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(25):
            inner = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        assert os.stat("deepfile", dir_fd=fd).st_size == 5
    finally:
        os.close(fd)
