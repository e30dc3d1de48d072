"""Host-side reads and writes in the working directory never follow a link out of it.

Each attack plants a link where lmc's own process will read or write, then checks the
target outside the working directory from outside; the plain ``pathlib`` call lmc used
before shows the same attempt working.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lmc.workspace.untrusted import (
    UnsafePathError,
    checked_parts,
    chmod_regular,
    read_regular,
    remove_empty_folders,
    remove_file,
    write_link,
    write_regular,
)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY")
    secret.chmod(0o600)
    return secret


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_a_link_to_a_secret_is_not_read(work: Path, outside: Path) -> None:
    (work / "AGENTS.md").symlink_to(outside)
    assert (work / "AGENTS.md").read_text() == "PRIVATE KEY"  # what following did
    with pytest.raises(UnsafePathError):
        read_regular(work, "AGENTS.md", 1000)


def test_a_linked_folder_on_the_way_is_not_walked(work: Path, outside: Path) -> None:
    (work / "docs").symlink_to(outside.parent)
    with pytest.raises(UnsafePathError):
        read_regular(work, "docs/id_rsa", 1000)


def test_reads_stop_at_the_cap(work: Path) -> None:
    with (work / "big").open("wb") as handle:
        handle.truncate(512 * 1024 * 1024)  # sparse: no disk used
    data = read_regular(work, "big", 4096)
    assert data is not None and len(data) == 4097


def test_a_fifo_is_refused_without_blocking(work: Path) -> None:
    os.mkfifo(work / "AGENTS.md")
    with pytest.raises(UnsafePathError):
        read_regular(work, "AGENTS.md", 100)


def test_missing_is_none(work: Path) -> None:
    assert read_regular(work, "a/b/c.txt", 10) is None


@pytest.mark.parametrize("bad", ["/etc/passwd", "../x", "a/../../x", "", "a\x00b"])
def test_paths_that_leave_are_refused(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        checked_parts(bad)


def test_a_write_replaces_a_link_instead_of_following_it(work: Path, outside: Path) -> None:
    (work / "notes.txt").symlink_to(outside)
    write_regular(work, "notes.txt", b"new", 0o644)
    assert outside.read_text() == "PRIVATE KEY"
    assert oct(outside.stat().st_mode & 0o777) == "0o600"
    assert not (work / "notes.txt").is_symlink()
    assert (work / "notes.txt").read_bytes() == b"new"


def test_a_write_through_a_linked_folder_is_refused(work: Path, outside: Path) -> None:
    (work / "sub").symlink_to(outside.parent)
    with pytest.raises(UnsafePathError):
        write_regular(work, "sub/id_rsa", b"pwned")
    assert outside.read_text() == "PRIVATE KEY"
    (work / "sub" / "id_rsa").write_text("pwned")  # what a plain write does
    assert outside.read_text() == "pwned"


def test_remove_removes_the_link_not_its_target(work: Path, outside: Path) -> None:
    (work / "x").symlink_to(outside)
    assert remove_file(work, "x") is True
    assert outside.exists() and not (work / "x").is_symlink()
    assert remove_file(work, "x") is False


def test_writes_make_missing_folders(work: Path) -> None:
    write_regular(work, "a/b/c.txt", b"hi")
    assert (work / "a" / "b" / "c.txt").read_bytes() == b"hi"


def test_a_link_is_written_in_place_of_what_is_there(work: Path, outside: Path) -> None:
    (work / "ln").write_text("file")
    write_link(work, "ln", str(outside))
    assert os.readlink(work / "ln") == str(outside) and outside.read_text() == "PRIVATE KEY"
    (work / "sub").symlink_to(outside.parent)
    with pytest.raises(UnsafePathError):
        write_link(work, "sub/ln", "x")  # never inside a linked folder
    assert not (outside.parent / "ln").exists()


def test_remove_leaves_folders_and_empty_parents_go(work: Path) -> None:
    (work / "a" / "b").mkdir(parents=True)
    (work / "a" / "b" / "f").write_text("x")
    assert remove_file(work, "a/b") is False and (work / "a" / "b").is_dir()
    assert remove_file(work, "a/b/f") is True
    remove_empty_folders(work, "a/b/f")
    assert not (work / "a").exists()


def test_empty_parents_are_not_followed_out(work: Path, outside: Path) -> None:
    empty = outside.parent / "empty"
    empty.mkdir()
    (work / "d").symlink_to(empty)
    remove_empty_folders(work, "d/x/f")
    assert empty.is_dir() and (work / "d").is_symlink()


def test_chmod_through_a_linked_folder_is_refused(work: Path, outside: Path) -> None:
    (work / "sub").symlink_to(outside.parent)
    with pytest.raises(UnsafePathError):
        chmod_regular(work, "sub/id_rsa", 0o4777)
    assert oct(outside.stat().st_mode & 0o7777) == "0o600"
    (work / "sub" / "id_rsa").chmod(0o4777)  # what a chmod by path does
    assert oct(outside.stat().st_mode & 0o7777) == "0o4777"


def test_a_name_of_255_bytes_is_written(work: Path) -> None:
    name = "n" * 255
    write_regular(work, name, b"long")
    write_link(work, "l" * 255, name)
    assert (work / name).read_bytes() == b"long" and (work / ("l" * 255)).read_bytes() == b"long"
