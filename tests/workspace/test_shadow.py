"""Snapshots in the shadow repository against real git and real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.workspace_testing import files_of, git, git_state

from lmc.errors import WorkspaceError
from lmc.workspace.changes import FileChange, changes_between, patch_between
from lmc.workspace.shadow import ShadowRepo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "secret").write_text("key\n")
    (root / "secret").chmod(0o600)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "debug.log").write_text("noise\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("x = 1\n")
    (root / "link").symlink_to("a.txt")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "a.txt").write_text("one\ntwo\nstaged\n")
    git(root, "add", "a.txt")  # something in the project's index
    git(root, "stash", "-q")  # and a stash
    return root


def test_restore_is_byte_exact_with_modes_and_leaves_git_and_ignored_files(
    project: Path, tmp_path: Path
) -> None:
    repo = ShadowRepo(project, tmp_path / "shadow")
    before_files, before_git = files_of(project), git_state(project)
    before = repo.snapshot()
    (project / "a.txt").write_text("one\nTWO\nthree\n")
    (project / "secret").unlink()
    (project / "run.sh").chmod(0o644)
    (project / "src" / "m.py").chmod(0o640)
    (project / "new" / "deep").mkdir(parents=True)
    (project / "new" / "deep" / "n.bin").write_bytes(bytes(range(256)))
    (project / "link").unlink()
    (project / "link").symlink_to("src")
    (project / "debug.log").write_text("changed, but ignored\n")
    after = repo.snapshot()
    assert changes_between(repo, before.commit, after.commit) == [
        FileChange("a.txt", "modified", 2, 1),
        FileChange("link", "modified", 1, 1),
        FileChange("new/deep/n.bin", "added", None, None),
        FileChange("run.sh", "modified", 0, 0),
        FileChange("secret", "deleted", 0, 1),
    ]
    assert "+TWO" in patch_between(repo, before.commit, after.commit)
    restored = repo.restore(before.commit, after)
    assert "new/deep/n.bin" in restored and "src/m.py" in restored
    now = files_of(project)
    assert now.pop("debug.log")[0] == b"changed, but ignored\n"  # ignored: not ours
    assert now == {k: v for k, v in before_files.items() if k != "debug.log"}
    assert not (project / "new").exists()
    assert git_state(project) == before_git
    assert git(project, "stash", "list").count("\n") == 1


def test_the_same_files_give_the_same_snapshot(project: Path, tmp_path: Path) -> None:
    repo = ShadowRepo(project, tmp_path / "shadow")
    first = repo.snapshot()
    assert repo.snapshot() == first
    again = ShadowRepo(project, tmp_path / "shadow").snapshot()  # a new process, same store
    assert again.tree == first.tree


def test_large_files_are_left_out_and_left_alone(project: Path, tmp_path: Path) -> None:
    repo = ShadowRepo(project, tmp_path / "shadow", max_file_bytes=1000)
    (project / "big.bin").write_bytes(b"x" * 5000)
    before = repo.snapshot()
    assert before.skipped == ("big.bin",)
    (project / "big.bin").write_bytes(b"y" * 5000)
    (project / "a.txt").write_text("changed\n")
    after = repo.snapshot()
    assert [c.path for c in changes_between(repo, before.commit, after.commit)] == ["a.txt"]
    repo.restore(before.commit, after)
    assert (project / "big.bin").read_bytes() == b"y" * 5000
    assert (project / "a.txt").read_text() == "one\ntwo\n"


def test_a_file_that_grows_past_the_cap_leaves_the_snapshot(project: Path, tmp_path: Path) -> None:
    repo = ShadowRepo(project, tmp_path / "shadow", max_file_bytes=1000)
    first = repo.snapshot()
    (project / "a.txt").write_bytes(b"z" * 4000)
    second = repo.snapshot()
    assert "a.txt" in second.skipped
    assert [c.path for c in changes_between(repo, first.commit, second.commit)] == ["a.txt"]


def test_too_many_files_is_one_clear_error(tmp_path: Path) -> None:
    """Too many files with no folder to leave out (all at the top)."""
    work = tmp_path / "many"
    work.mkdir()
    for i in range(30):
        (work / f"f{i}").write_text(str(i))
    with pytest.raises(
        WorkspaceError, match="more than 20 files outside its largest folders: checkpoints are off"
    ):
        ShadowRepo(work, tmp_path / "shadow", max_files=20).snapshot()


def test_a_folder_of_50001_files_is_left_out_and_the_rest_snapshotted(
    project: Path, tmp_path: Path
) -> None:
    """The attack: a block makes 50,001 files, then overwrites a file (default caps)."""
    repo = ShadowRepo(project, tmp_path / "shadow")
    before = repo.snapshot()
    flood = project / "flood" / "inner"
    flood.mkdir(parents=True)
    for i in range(50_001):
        (flood / f"{i}").touch()
    (project / "a.txt").write_text("overwritten by the model\n")
    after = repo.snapshot()
    assert after.left_out == ("flood/inner",)
    assert [c.path for c in changes_between(repo, before.commit, after.commit)] == ["a.txt"]
    assert repo.restore(before.commit, after) == ["a.txt"]
    assert (project / "a.txt").read_text() == "one\ntwo\n"
    assert len(list(flood.iterdir())) == 50_001  # left as it is


def test_a_missing_workdir_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        ShadowRepo(tmp_path / "gone", tmp_path / "shadow").snapshot()


def test_no_git_is_one_clear_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(WorkspaceError, match="checkpoints need git"):
        ShadowRepo(project, tmp_path / "shadow").snapshot()


@pytest.mark.parametrize("protected", [True, False])
def test_a_planted_gitattributes_runs_no_filter_of_the_persons_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protected: bool
) -> None:
    """The code writes ``.gitattributes`` naming a filter that the person's ~/.gitconfig
    defines; the snapshot must not run it on the host (it runs with the global config)."""
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "ran-on-the-host"
    (home / ".gitconfig").write_text(f'[filter "evil"]\n\tclean = touch {marker}; cat\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitattributes").write_text("* filter=evil\n")
    (work / "a.txt").write_text("a\n")
    repo = ShadowRepo(work, tmp_path / "store")
    if not protected:  # the same snapshot with the person's config read, as before
        real_env = repo._env

        def with_global(*args: object, **kwargs: object) -> dict[str, str]:
            env = real_env(*args, **kwargs)  # type: ignore[arg-type]
            env.pop("GIT_CONFIG_GLOBAL")
            return env

        monkeypatch.setattr(repo, "_env", with_global)
    repo.snapshot()
    assert marker.exists() is not protected


def test_a_file_vanishing_under_the_snapshot_is_tried_again(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process the code left running (a loop swapping a folder for a link, seen in
    tests/agent/test_undo_frozen.py) can make a file vanish while git walks the tree: git
    stops with "unable to stat" (its words, from that run) and the whole checkpoint failed.
    The add is tried again; only a race that lasts through every try is an error."""
    repo = ShadowRepo(project, tmp_path / "shadow")
    real_git = ShadowRepo.git
    failures = {"left": 2}

    def racing(self: ShadowRepo, *args: str, **kwargs: object) -> bytes:
        if args[0] == "add" and failures["left"] > 0:
            failures["left"] -= 1
            raise WorkspaceError("git add failed: fatal: unable to stat 'keys/id_rsa'")
        return real_git(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ShadowRepo, "git", racing)
    snap = repo.snapshot()
    assert failures["left"] == 0 and snap.tree and snap.commit
    failures["left"] = 5  # a race that outlasts the tries: one clear error
    (project / "more.txt").write_text("changed\n")
    with pytest.raises(WorkspaceError, match="unable to stat"):
        repo.snapshot()
