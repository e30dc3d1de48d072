"""Repositories in the working directory checked for what git would run: a nested
repository's hook, a ``.git`` file pointing out, a bare repository git finds in the folder
itself, a hook that is a link. Each is found and switched off, and the person's own git run
from outside then runs nothing; without switching off, the same git runs the planted program."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lmc.workspace.planted_git import MAX_DEPTH, OFF_SUFFIX, find_risks, risks_note, switch_off


def persons_git(folder: Path, home: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    env.update(GIT_AUTHOR_NAME="p", GIT_AUTHOR_EMAIL="p@x")
    env.update(GIT_COMMITTER_NAME="p", GIT_COMMITTER_EMAIL="p@x")
    subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, check=False)


def toucher(path: Path, marker: Path) -> None:
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)


@pytest.mark.parametrize("protected", [True, False])
def test_a_nested_repositorys_hook_does_not_run_at_the_persons_commit(
    tmp_path: Path, protected: bool
) -> None:
    work, marker = tmp_path / "work", tmp_path / "HOOK-RAN"
    sub = work / "a" / "b"
    sub.mkdir(parents=True)
    persons_git(sub, tmp_path, "init", "-q")
    toucher(sub / ".git" / "hooks" / "pre-commit", marker)
    risks = find_risks(work)
    assert [(r.path, r.what) for r in risks] == [
        ("a/b/.git/hooks/pre-commit", "an executable hook")
    ]
    if protected:
        assert switch_off(work, risks) == []
        assert (sub / ".git" / "hooks" / f"pre-commit{OFF_SUFFIX}").exists()
        assert find_risks(work) == []
    (sub / "f").write_text("x")
    persons_git(sub, tmp_path, "add", "f")
    persons_git(sub, tmp_path, "commit", "-qm", "m")
    assert marker.exists() is not protected


def test_a_git_file_pointing_out_of_the_working_directory_is_renamed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "x").mkdir(parents=True)
    (work / "x" / ".git").write_text(f"gitdir: {tmp_path / 'elsewhere'}\n")
    risks = find_risks(work)
    assert [r.what for r in risks] == ["a .git file pointing out of the working directory"]
    switch_off(work, risks)
    assert not (work / "x" / ".git").exists()
    assert (work / "x" / f".git{OFF_SUFFIX}").read_text().startswith("gitdir:")


def test_a_git_file_pointing_inside_is_followed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "x").mkdir(parents=True)
    (work / "store" / "hooks").mkdir(parents=True)
    (work / "store" / "config").write_text("[core]\n\tsshCommand = evil\n")
    (work / "x" / ".git").write_text("gitdir: ../store\n")
    assert [(r.path, r.what) for r in find_risks(work)] == [("store/config", "core.sshcommand")]


@pytest.mark.parametrize("protected", [True, False])
def test_a_bare_repository_made_of_the_folder_itself_is_found(
    tmp_path: Path, protected: bool
) -> None:
    """No .git at all: HEAD, objects/, refs/ and config in the folder make git use it."""
    work, marker = tmp_path / "work", tmp_path / "FSMONITOR-RAN"
    work.mkdir()
    persons_git(work, tmp_path, "init", "-q", "--bare")
    toucher(tmp_path / "mon.sh", marker)
    with (work / "config").open("a") as config:
        config.write(f"\tfsmonitor = {tmp_path / 'mon.sh'}\n")
    risks = find_risks(work)
    assert [(r.path, r.what) for r in risks] == [("config", "core.fsmonitor")]
    if protected:
        switch_off(work, risks)
    persons_git(work, tmp_path, "--work-tree=.", "status")
    assert marker.exists() is not protected


def test_a_hook_that_is_a_link_is_found_and_the_note_draws_names_safely(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    persons_git(work, tmp_path, "init", "-q")
    (work / ".git" / "hooks" / "post-checkout").symlink_to("/bin/\x1b]52;c;x\x07sh")
    risks = find_risks(work)
    assert [r.what for r in risks] == ["a hook that is a link"]
    note = risks_note(risks, [], switched=True)
    assert "\x1b" not in note and "\x07" not in note
    assert ".git/hooks/post-checkout: a hook that is a link = /bin/^[]52;c;x^Gsh" in note


def test_the_search_is_bounded_in_depth(tmp_path: Path) -> None:
    """A repository below MAX_DEPTH folders is not searched (said in the README)."""
    work = tmp_path / "work"
    shallow = work.joinpath(*["d"] * MAX_DEPTH)
    deep = shallow / "deeper"
    for folder in (shallow, deep):
        folder.mkdir(parents=True, exist_ok=True)
        persons_git(folder, tmp_path, "init", "-q")
        persons_git(folder, tmp_path, "config", "core.pager", "less")
    assert [r.path for r in find_risks(work)] == ["d/d/d/d/.git/config"]


def test_switching_off_an_unreadable_header_moves_no_setting_under_another(
    tmp_path: Path,
) -> None:
    """``[ weird ]`` is commented out; the key under it then falls under ``[core]``: that
    key is switched off too, never left as ``core.fsmonitor``."""
    work = tmp_path / "work"
    work.mkdir()
    persons_git(work, tmp_path, "init", "-q")
    config = work / ".git" / "config"
    config.write_text(config.read_text() + "[ weird ]\n\tfsmonitor = /x/mon.sh\n")
    switch_off(work, find_risks(work))
    assert find_risks(work) == []
    assert "#lmc-off# \tfsmonitor = /x/mon.sh" in config.read_text()
