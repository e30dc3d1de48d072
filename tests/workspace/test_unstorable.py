"""What git leaves out of a snapshot on its own, read from git's real messages: a tree
deeper than PATH_MAX made in the working directory with ``os.chdir`` in a loop, and a name git
refuses. Before, both were missing from the snapshot without a word."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lmc.workspace.shadow import ShadowRepo
from lmc.workspace.unstorable import TOO_LONG, shown_path, unstorable_in


def _deep(root: Path, depth: int = 25) -> None:
    here = Path.cwd()
    try:
        os.chdir(root)
        for _ in range(depth):
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
        Path("deepfile").write_text("deep\n")
        assert len(os.getcwd()) > 4096
    finally:
        os.chdir(here)


def test_a_snapshot_says_what_git_could_not_take(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "kept.txt").write_text("kept\n")
    (work / ".GIT").mkdir()
    (work / ".GIT" / "x").write_text("x\n")
    _deep(work)
    try:
        snap = ShadowRepo(work, tmp_path / "store").snapshot()
        shown = "/".join(["d" * 40] * 3) + "/..."
        assert dict(snap.unstorable) == {
            ".GIT/x": "git cannot store that name",
            shown: f"git could not open it: {TOO_LONG}",
        }
    finally:
        shutil.rmtree(work)


def test_git_messages_are_read_with_their_reasons() -> None:
    lines = [
        "warning: could not open directory 'locked/': Permission denied",
        "warning: could not open directory '" + "x/" * 3000,  # cut by git before its end
        "error: invalid path 'git~1'",
        "error: unable to index file 'secret'",
        "warning: adding embedded git repository: sub",
    ]
    assert unstorable_in(lines) == [
        ("git~1", "git cannot store that name"),
        ("locked", "git could not open it: permission denied"),
        ("secret", "git could not read it"),
        ("x/x/x/...", f"git could not open it: {TOO_LONG}"),
    ]
    assert shown_path("a/b") == "a/b"
