"""The wrapper kernels' file helpers (kernels/lmc_wrapper/files.py), which stand in for
shutil.which, tempfile.mkdtemp and shutil.rmtree in the kernels' processes."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from support.kernel_testing import KERNELS

sys.path.insert(0, str(KERNELS))

from lmc_wrapper.files import private_dir, remove_tree, which


def test_which_finds_what_shutil_finds(tmp_path: Path) -> None:
    assert which("sh") == shutil.which("sh")
    plain = tmp_path / "tool"
    plain.write_text("#!/bin/sh\n")
    assert which("tool", path=str(tmp_path)) is None  # not executable
    plain.chmod(0o755)
    assert which("tool", path=f"/nonexistent{os.pathsep}{tmp_path}") == str(plain)
    assert which("no-such-program-here", path=str(tmp_path)) is None


def test_a_private_dir_is_the_owners_alone_in_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))  # unusable: the next one is used
    monkeypatch.setenv("TEMP", str(tmp_path))
    made = private_dir("lmc-test-")
    assert Path(made).parent == tmp_path and Path(made).name.startswith("lmc-test-")
    assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    assert private_dir("lmc-test-") != made


def test_remove_tree_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "file").write_text("x")
    (tree / "link").symlink_to(outside, target_is_directory=True)
    remove_tree(str(tree))
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "kept"
    remove_tree(str(tree))  # already gone: nothing raised
