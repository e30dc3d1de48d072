"""The stat fingerprint that lets an unchanged working directory skip git entirely."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lmc.workspace import fingerprint
from lmc.workspace.fingerprint import Fingerprint, tree_fingerprint
from lmc.workspace.shadow import ShadowRepo


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small tree; entries written before the walk count as settled (no racy window)."""
    monkeypatch.setattr(fingerprint, "RACY_NS", 0)
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print(1)\n")
    (root / "notes.txt").write_text("alpha\n")
    (root / "link").symlink_to("notes.txt")
    return root


def taken(root: Path, **kwargs: object) -> Fingerprint:
    seen = tree_fingerprint(root, **kwargs)  # type: ignore[arg-type]
    assert seen is not None
    return seen


def test_an_unchanged_tree_has_the_same_fingerprint(tree: Path) -> None:
    assert taken(tree).same_as(taken(tree))


def retarget_link(root: Path) -> None:
    (root / "link").unlink()
    (root / "link").symlink_to("x")


def swap_file_for_link(root: Path) -> None:
    (root / "src" / "a.py").unlink()
    (root / "src" / "a.py").symlink_to("/etc/passwd")


CHANGES: dict[str, Callable[[Path], object]] = {
    "a new file": lambda root: (root / "src" / "b.py").write_text(""),
    "a longer file": lambda root: (root / "notes.txt").write_text("alpha\nbeta\n"),
    "a mode": lambda root: (root / "notes.txt").chmod(0o600),
    "a rename": lambda root: (root / "src" / "a.py").rename(root / "src" / "c.py"),
    "a deletion": lambda root: (root / "notes.txt").unlink(),
    "an empty folder": lambda root: (root / "empty").mkdir(),
    "a link's target": retarget_link,
    "a file swapped for a link": swap_file_for_link,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_kind_of_change_is_seen(tree: Path, change: str) -> None:
    before = taken(tree)
    CHANGES[change](tree)
    assert not taken(tree).same_as(before)


def test_a_file_changed_just_now_is_not_trusted(tmp_path: Path) -> None:
    """Racily clean: a same-size rewrite within the time stamps' granularity would look
    unchanged, so a fingerprint that saw a fresh change is never reused."""
    (tmp_path / "f").write_text("one")
    seen = taken(tmp_path)
    assert seen.racy
    assert not taken(tmp_path).same_as(seen)


def test_a_folder_changed_just_now_is_trusted(tmp_path: Path) -> None:
    """A folder's own times only say its listing changed, and the listing is in the
    fingerprint: folders made just now (no file in them) leave it trusted, so a working
    directory another tool just touched does not make every snapshot run git."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "c").mkdir()
    seen = taken(tmp_path)
    assert not seen.racy
    assert taken(tmp_path).same_as(seen)
    (tmp_path / "c" / "new").mkdir()
    assert not taken(tmp_path).same_as(seen)


def test_git_and_lmc_own_files_are_left_out(tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / ".lmc-data").mkdir()
    before = taken(tree, skip=[".lmc-data"])
    (tree / ".git" / "index").write_text("changed by git status")
    (tree / ".lmc-data" / "db").write_text("written by lmc")
    assert taken(tree, skip=[".lmc-data"]).entries[:-1] == before.entries[:-1]


def test_a_tree_over_the_cap_has_no_fingerprint(tree: Path) -> None:
    for n in range(10):
        (tree / f"f{n}").write_text("")
    assert tree_fingerprint(tree, max_entries=5) is None


def test_links_are_not_followed(tree: Path, tmp_path: Path) -> None:
    big = tmp_path / "outside"
    big.mkdir()
    for n in range(50):
        (big / f"f{n}").write_text("")
    (tree / "out").symlink_to(big)
    seen = taken(tree, max_entries=10)  # the 50 files behind the link are never walked
    (big / "f0").write_text("changed outside")
    assert taken(tree, max_entries=10).same_as(seen)


def test_an_unchanged_snapshot_runs_no_git(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ShadowRepo(tree, tmp_path / "store")
    first = repo.snapshot()
    calls: list[str] = []
    real_git = repo.git

    def counting(*args: str, **kwargs: object) -> bytes:
        calls.append(args[0])
        return real_git(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(repo, "git", counting)
    assert repo.snapshot() == first
    assert calls == []
    (tree / "notes.txt").write_text("alpha\nchanged\n")
    after = repo.snapshot()
    assert "write-tree" in calls and after.tree != first.tree
    shown = real_git("show", f"{after.commit}:notes.txt")
    assert shown == b"alpha\nchanged\n"


def test_a_restore_forgets_the_fingerprint(tree: Path, tmp_path: Path) -> None:
    repo = ShadowRepo(tree, tmp_path / "store")
    first = repo.snapshot()
    (tree / "notes.txt").write_text("alpha\nbeta\n")
    second = repo.snapshot()
    repo.restore(first.commit, second)
    assert (tree / "notes.txt").read_text() == "alpha\n"
    os.utime(tree / "notes.txt")
    assert repo.snapshot().tree == first.tree


def _counting(repo: ShadowRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_git = repo.git

    def counting(*args: str, **kwargs: object) -> bytes:
        calls.append(args[0])
        return real_git(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(repo, "git", counting)
    return calls


def test_a_new_process_in_an_unchanged_folder_runs_no_git(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each `lmc run` is a new process: the last snapshot and what it saw are kept in the
    store, so the next one's first block needs no git while nothing changed."""
    first = ShadowRepo(tree, tmp_path / "store").snapshot()
    later = ShadowRepo(tree, tmp_path / "store")
    calls = _counting(later, monkeypatch)
    assert later.snapshot() == first
    assert calls == []
    (tree / "src" / "a.py").write_text("print(2)\n")
    third = ShadowRepo(tree, tmp_path / "store")
    calls = _counting(third, monkeypatch)
    changed = third.snapshot()
    assert "write-tree" in calls and changed.tree != first.tree


def test_a_new_process_with_other_limits_or_after_a_restore_runs_git(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ShadowRepo(tree, tmp_path / "store")
    first = repo.snapshot()
    other = ShadowRepo(tree, tmp_path / "store", max_file_bytes=3)
    calls = _counting(other, monkeypatch)
    assert other.snapshot().skipped  # the files are over its size limit: a snapshot of its own
    assert "write-tree" in calls
    (tree / "notes.txt").write_text("alpha\nbeta\n")
    second = repo.snapshot()
    repo.restore(first.commit, second)
    again = ShadowRepo(tree, tmp_path / "store")
    calls = _counting(again, monkeypatch)
    assert again.snapshot().tree == first.tree
    assert "write-tree" in calls
