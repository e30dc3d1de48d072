"""The config reader: which settings make git run a program, checked against real git (the
value git itself reads for the same file), and switching them off leaves git reading none."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lmc.workspace.git_config import risky_lines, switched_off

RISKY = """\
[core]
\trepositoryformatversion = 0
\tfsmonitor = /x/mon.sh
[core] pager = less -R
[sequence] editor = vi
\tkept = yes
[filter "lfs"]
\tclean = cat \\
  --more
[alias]
\tst = status
\tsh = "!sh -c id"
[Diff.Tool]
\ttextconv = od
[user]
\tname = someone ; a comment
[includeIf "gitdir:~/"]
\tpath = ../evil
"""


def _git_config(path: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "config", "--file", str(path), "--list"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def test_the_settings_that_run_programs_are_found_as_git_reads_them(tmp_path: Path) -> None:
    names = {line.name: line.value for line in risky_lines(RISKY)}
    assert names == {
        "core.fsmonitor": "/x/mon.sh",
        "core.pager": "less -R",
        "sequence.editor": "vi",
        "filter.lfs.clean": "cat   --more",
        "alias.sh": "!sh -c id",
        "diff.tool.textconv": "od",
        "includeif.gitdir:~/.path": "../evil",
    }
    config = tmp_path / "config"
    config.write_text(RISKY)
    seen = dict(line.split("=", 1) for line in _git_config(config))
    for name, value in names.items():
        assert seen[name] == value  # the same value real git reads


def test_switched_off_git_reads_none_of_them_and_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(switched_off(RISKY, risky_lines(RISKY)))
    assert risky_lines(config.read_text()) == []
    seen = _git_config(config)
    assert "user.name=someone" in seen and "alias.st=status" in seen
    assert "sequence.kept=yes" in seen  # its header, on the line switched off, stays
    assert not [line for line in seen if line.startswith(("core.fsmonitor", "core.pager"))]
    assert len(seen) == 4


@pytest.mark.parametrize(
    "text",
    ["[core]\n\tfsmonitor = true\n", "[alias]\n\tco = checkout\n", '[remote "o"]\n\turl = x\n'],
)
def test_what_names_no_program_is_left_alone(text: str) -> None:
    assert risky_lines(text) == []


def test_a_line_git_may_read_but_lmc_cannot_is_switched_off_too() -> None:
    found = risky_lines("[core]\n\t!odd\n")
    assert [line.name for line in found] == ["(a line lmc cannot read)"]
