"""Undo never removes, writes or chmods through a folder swapped for a link.

The attack: after the snapshot undo compares with, a folder the shadow knows becomes a link
to a fake ``~/.ssh``. The restore must leave every file there as it was (checked from
outside) and say why; the path operations lmc used before (``Path.chmod``, ``unlink``,
``write_bytes`` by path) are shown reaching the target through the same link.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from lmc.workspace.shadow import ShadowRepo


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def ssh(tmp_path: Path) -> Path:
    """A fake ~/.ssh outside the working directory, with the names the folder had."""
    folder = tmp_path / "home" / ".ssh"
    folder.mkdir(parents=True)
    for name in ("id_rsa", "config", "added.txt"):
        (folder / name).write_text(f"outside {name}\n")
        (folder / name).chmod(0o600)
    return folder


def _swapped_turn(work: Path, shadow: Path, ssh: Path) -> tuple[ShadowRepo, str, list[str]]:
    """A turn that changed keys/ (a mode, a file, a new file); then keys -> ssh; restore."""
    keys = work / "keys"
    keys.mkdir(parents=True)
    (keys / "id_rsa").write_text("inside\n")
    (keys / "config").write_text("inside config\n")
    repo = ShadowRepo(work, shadow)
    before = repo.snapshot()
    (keys / "id_rsa").chmod(0o600)
    (keys / "config").write_text("changed by the model\n")
    (keys / "added.txt").write_text("new\n")
    current = repo.snapshot()
    shutil.rmtree(keys)
    keys.symlink_to(ssh)  # the swap, after the snapshot undo works from
    problems: list[str] = []
    repo.restore(before.commit, current, problems)
    return repo, before.commit, problems


def test_a_folder_swapped_for_a_link_is_not_written_through(tmp_path: Path, ssh: Path) -> None:
    outside = {p.name: (p.read_bytes(), _mode(p)) for p in ssh.iterdir()}
    _repo, _before, problems = _swapped_turn(tmp_path / "work", tmp_path / "shadow", ssh)
    assert {p.name: (p.read_bytes(), _mode(p)) for p in ssh.iterdir()} == outside
    assert problems and all("keys is a link or not a folder" in p for p in problems)
    assert {p.split(":")[0] for p in problems} == {"keys/added.txt", "keys/config", "keys/id_rsa"}


def test_the_old_path_operations_went_through_the_link(tmp_path: Path, ssh: Path) -> None:
    """What the restore did before: chmod, unlink and write by path, each through keys/."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "keys").symlink_to(ssh)
    (work / "keys" / "id_rsa").chmod(0o777)
    (work / "keys" / "added.txt").unlink()
    (work / "keys" / "config").write_text("inside config\n")
    assert _mode(ssh / "id_rsa") == 0o777
    assert not (ssh / "added.txt").exists()
    assert (ssh / "config").read_text() == "inside config\n"


def test_chmod_of_a_link_or_an_unreadable_file(tmp_path: Path, ssh: Path) -> None:
    from lmc.workspace.untrusted import chmod_regular

    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(ssh / "id_rsa")
    assert not chmod_regular(work, "link", 0o777)  # a link has no bits of its own to set
    assert _mode(ssh / "id_rsa") == 0o600
    (work / "w").write_text("x")
    (work / "w").chmod(0o200)  # unreadable: opened with O_PATH, still changed
    assert chmod_regular(work, "w", 0o640) and _mode(work / "w") == 0o640
    assert not chmod_regular(work, "missing", 0o640)


def test_a_restore_in_place_is_still_exact(tmp_path: Path) -> None:
    """Without the swap every kind of entry comes back: a link, a 0600 file, a new folder."""
    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    (work / "d" / "secret").write_text("key\n")
    (work / "d" / "secret").chmod(0o600)
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "ln").symlink_to("run.sh")
    repo = ShadowRepo(work, tmp_path / "shadow")
    before = repo.snapshot()
    shutil.rmtree(work / "d")
    (work / "run.sh").chmod(0o644)
    (work / "ln").unlink()
    (work / "new" / "deep").mkdir(parents=True)
    (work / "new" / "deep" / "x").write_text("x")
    problems: list[str] = []
    repo.restore(before.commit, repo.snapshot(), problems)
    assert problems == []
    assert (work / "d" / "secret").read_text() == "key\n" and _mode(work / "d" / "secret") == 0o600
    assert _mode(work / "run.sh") == 0o755 and os.readlink(work / "ln") == "run.sh"
    assert not (work / "new").exists()


def test_undo_after_the_swap_restores_the_folder_and_leaves_the_target(
    tmp_path: Path, ssh: Path
) -> None:
    """The swap before undo's own snapshot (``lmc undo --force`` later): the link goes, the
    folder comes back with its 0777 and setuid bits, the target keeps 0600."""
    work = tmp_path / "work"
    keys = work / "keys"
    keys.mkdir(parents=True)
    (keys / "id_rsa").write_text("inside\n")
    (keys / "id_rsa").chmod(0o4777)
    repo = ShadowRepo(work, tmp_path / "shadow")
    before = repo.snapshot()
    (keys / "id_rsa").chmod(0o600)
    repo.snapshot()
    shutil.rmtree(keys)
    keys.symlink_to(ssh)
    problems: list[str] = []
    repo.restore(before.commit, repo.snapshot(), problems)
    assert problems == []
    assert not keys.is_symlink() and (keys / "id_rsa").read_text() == "inside\n"
    assert _mode(keys / "id_rsa") == 0o4777
    assert _mode(ssh / "id_rsa") == 0o600 and (ssh / "id_rsa").read_text() == "outside id_rsa\n"
