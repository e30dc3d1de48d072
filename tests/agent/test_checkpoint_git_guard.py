"""A repository the code makes in the sandbox is the person's after the session: code that
sets ``core.fsmonitor`` to its own script would have the person's next ``git status`` run it,
outside the sandbox. The real attempt, in the real ``workspace`` sandbox through the agent
loop; the person's ``git status`` is run from outside (its own HOME) and the marker the
script writes outside the working directory is checked. With the guard off (warning only)
the same attempt succeeds; a plain ``git init`` and commit raises nothing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter, shell_call

from lmc.computer import Computer
from lmc.messages import Chunk, text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"


def plant(project: Path, marker: Path) -> str:
    """Shell that makes a repository whose fsmonitor is a script touching ``marker``."""
    script = project / "mon.sh"
    return shell_call(
        f"cd {project} && git init -q && git config user.name m && "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > {script} && chmod +x {script} && "
        f"git config core.fsmonitor {script} && echo PLANTED"
    )


def persons_git_status(project: Path, home: Path) -> None:
    """The person's own ``git status`` in that folder after the session (their own HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "status"], cwd=project, env=env, capture_output=True, check=False)


@pytest.fixture
def place(tmp_path: Path) -> Iterator[tuple[Path, Computer]]:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "home").mkdir()
    with Computer(cwd=project, sandbox="workspace") as computer:
        yield project, computer


def _said(chunks: list[Chunk]) -> str:
    return "".join(text_of(c) for c in chunks if c.get("type") == "message")


@pytest.mark.parametrize("guard", [True, False])
def test_a_planted_fsmonitor_does_not_run_at_the_persons_git(
    make_interpreter: MakeInterpreter, place: tuple[Path, Computer], tmp_path: Path, guard: bool
) -> None:
    project, computer = place
    marker = tmp_path / "RAN-OUTSIDE"
    interpreter, backend = make_interpreter(
        [plant(project, marker), FINAL.format("done")], computer=computer, auto_run=True
    )
    assert interpreter.checkpointer is not None
    interpreter.checkpointer.git.switch_off = guard
    chunks = list(interpreter.chat("make a repository", stream=True, display=False))
    output = "".join(text_of(c) for c in chunks if c.get("type") == "console")
    assert "PLANTED" in output, output
    assert not marker.exists()  # the code itself cannot write there
    said = _said(chunks)
    assert ".git/config: core.fsmonitor = " in said, said
    assert "core.fsmonitor" in backend.prompts[-1]  # the model was told too
    persons_git_status(project, tmp_path / "home")
    if not guard:
        assert marker.exists()  # the attempt works without the guard
        return
    assert not marker.exists()
    config = (project / ".git" / "config").read_text()
    assert f"#lmc-off# \tfsmonitor = {project / 'mon.sh'}" in config
    interpreter.undo()
    assert not (project / "mon.sh").exists()  # the turn's files are undone as ever
    assert (project / ".git").is_dir()  # a .git is never in a snapshot: undo leaves it
    persons_git_status(project, tmp_path / "home")
    assert not marker.exists()


def test_a_plain_git_init_and_commit_raise_no_warning(
    make_interpreter: MakeInterpreter, place: tuple[Path, Computer]
) -> None:
    project, computer = place
    code = (
        f"cd {project} && git init -q && git config user.name m && git config user.email m@x "
        "&& echo hi > a.txt && git add a.txt && git commit -qm first && "
        "git remote add origin https://example.org/r.git && echo COMMITTED"
    )
    interpreter, backend = make_interpreter(
        [shell_call(code), FINAL.format("done")], computer=computer, auto_run=True
    )
    chunks = list(interpreter.chat("commit", stream=True, display=False))
    output = "".join(text_of(c) for c in chunks if c.get("type") == "console")
    assert "COMMITTED" in output, output
    assert "git to run programs" not in _said(chunks)
    assert "#lmc-off#" not in (project / ".git" / "config").read_text()
    assert "git to run programs" not in backend.prompts[-1]


def test_the_persons_own_hook_is_left_alone_until_the_code_changes_it(
    make_interpreter: MakeInterpreter, place: tuple[Path, Computer], tmp_path: Path
) -> None:
    """A repository two folders down (not one the sandbox keeps read-only) with the person's
    own executable hook: a block that leaves it alone raises nothing; one that rewrites it
    gets it switched off."""
    project, computer = place
    nested = project / "a" / "b"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
    hook = nested / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    calls = [
        shell_call("echo LOOKED"),
        shell_call(f"echo 'touch {tmp_path / 'RAN'}' >> {hook} && echo CHANGED"),
        FINAL.format("done"),
    ]
    interpreter, _ = make_interpreter(calls, computer=computer, auto_run=True)
    chunks = list(interpreter.chat("look, then change", stream=True, display=False))
    said = _said(chunks)
    assert said.count("git to run programs") == 1, said
    assert "a/b/.git/hooks/pre-commit: an executable hook" in said
    texts = [text_of(c) for c in chunks]
    changed = next(i for i, t in enumerate(texts) if "CHANGED" in t)
    warned = next(i for i, t in enumerate(texts) if "git to run programs" in t)
    assert changed < warned  # not after the block that only looked
    assert not hook.exists() and hook.with_name("pre-commit.lmc-off").exists()


def test_with_checkpoints_off_the_plant_is_switched_off_all_the_same(
    make_interpreter: MakeInterpreter, place: tuple[Path, Computer], tmp_path: Path
) -> None:
    project, computer = place
    marker = tmp_path / "RAN-OUTSIDE"
    interpreter, _ = make_interpreter(
        [plant(project, marker), FINAL.format("done")],
        computer=computer,
        auto_run=True,
        checkpoints=False,
    )
    assert interpreter.checkpointer is None
    chunks = list(interpreter.chat("make a repository", stream=True, display=False))
    assert ".git/config: core.fsmonitor = " in _said(chunks)
    persons_git_status(project, tmp_path / "home")
    assert not marker.exists()
