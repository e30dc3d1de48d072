"""%undo in the chat runs with the session's code stopped: a background process the code
left, swapping a folder for a link to a fake ~/.ssh in a loop, cannot race the restore.

The kernels run in the default sandbox; the loop is a real background process of the shell
kernel. Checked from outside: while undo works, every process under the kernels is stopped
(/proc says ``T``) and the loop's counter does not move; the files outside are untouched;
after undo the loop runs again. With the freeze off (a no-op in its place) the counter is
seen moving while the restore runs: the race the freeze closes.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter

from lmc.agent import Interpreter
from lmc.computer import Computer
from lmc.computer.freezing import descendants
from lmc.workspace import shadow

FINAL = "<|channel|>final<|message|>{}<|return|>"
# The loop: keys/ becomes a link to the fake ~/.ssh and back, counting each swap in count.log
# (ignored by .gitignore, so not part of the snapshots).
LOOP = (
    "( i=0; while true; do i=$((i+1)); echo $i > count.log; "
    "mv keys keys.real 2>/dev/null && ln -s {ssh} keys; "
    "rm -f keys; mv keys.real keys 2>/dev/null; done ) >/dev/null 2>&1 &"
)


def shell(code: str) -> str:
    arguments = json.dumps({"code": code})
    return (
        f"<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{arguments}<|call|>"
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frozen-project")


@pytest.fixture(scope="module")
def computer(project: Path) -> Iterator[Computer]:
    """Kernels in the default sandbox, working in the project."""
    with Computer(cwd=project) as shared:
        yield shared


def _count(project: Path) -> int:
    text = (project / "count.log").read_text().strip() if (project / "count.log").exists() else ""
    return int(text) if text.isdigit() else 0


def _setup(project: Path, home: Path) -> Path:
    for path in sorted(project.iterdir()):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    ssh = home / ".ssh"
    ssh.mkdir(exist_ok=True)
    for name in ("id_rsa", "new.txt"):
        (ssh / name).write_text(f"outside {name}\n")
        (ssh / name).chmod(0o600)
    (project / ".gitignore").write_text("count.log\nkeys.real/\n")
    (project / "keys").mkdir()
    (project / "keys" / "id_rsa").write_text("inside\n")
    return ssh


def _turn(make_interpreter: MakeInterpreter, ssh: Path) -> Interpreter:
    code = "chmod 600 keys/id_rsa; echo new > keys/new.txt; " + LOOP.format(ssh=ssh)
    interpreter, _ = make_interpreter([shell(code), FINAL.format("ok")], auto_run=True)
    interpreter.chat("change keys and keep busy", display=False)
    return interpreter


def _wait_moving(project: Path) -> int:
    """The loop's counter, once it is seen moving (polled, no clock)."""
    first = _count(project)
    for _ in range(10_000_000):
        if _count(project) > first + 2:
            return _count(project)
    raise AssertionError("the background loop never ran")


def test_undo_stops_the_code_while_it_restores(
    make_interpreter: MakeInterpreter, project: Path, home: Path, computer: Computer
) -> None:
    ssh = _setup(project, home)
    outside = {p.name: (p.read_bytes(), p.stat().st_mode) for p in ssh.iterdir()}
    interpreter = _turn(make_interpreter, ssh)
    _wait_moving(project)
    seen: dict[str, object] = {}
    real_restore = shadow.ShadowRepo.restore

    def watched(self: shadow.ShadowRepo, *args: object, **kwargs: object) -> list[str]:
        roots = [s.pid for s in computer._sessions.values() if s.pid is not None]  # type: ignore[attr-defined]
        pids = descendants(roots)
        states = {pid: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
                  for pid in pids if Path(f"/proc/{pid}").exists()}  # fmt: skip
        before = _count(project)
        done = real_restore(self, *args, **kwargs)  # type: ignore[arg-type]
        seen.update(states=states, moved=_count(project) - before, pids=len(pids))
        return done

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shadow.ShadowRepo, "restore", watched)
        interpreter.undo(force=True)
    assert seen, "undo never restored"
    states = seen["states"]
    assert isinstance(states, dict) and len(states) >= 3  # kernel, bash, the loop (at least)
    assert set(states.values()) <= {"T", "t", "Z"}, states
    assert seen["moved"] == 0
    assert {p.name: (p.read_bytes(), p.stat().st_mode) for p in ssh.iterdir()} == outside
    _wait_moving(project)  # resumed after the undo
    computer.restart("shell")  # ends the loop with its kernel


def test_without_the_freeze_the_loop_runs_during_the_restore(
    make_interpreter: MakeInterpreter, project: Path, home: Path, computer: Computer
) -> None:
    ssh = _setup(project, home)
    interpreter = _turn(make_interpreter, ssh)
    _wait_moving(project)
    moved: list[int] = []
    real_restore = shadow.ShadowRepo.restore

    def watched(self: shadow.ShadowRepo, *args: object, **kwargs: object) -> list[str]:
        before = _count(project)
        moved.append(_wait_moving(project) - before)  # the loop swaps while undo works
        return real_restore(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shadow.ShadowRepo, "restore", watched)
        mp.setattr(Computer, "frozen", lambda self: contextlib.nullcontext(set()))
        interpreter.undo(force=True)
    assert moved and moved[0] > 0
    assert all(p.read_text().startswith("outside") for p in ssh.iterdir())  # O_NOFOLLOW held
    computer.restart("shell")
