"""Kernel state survives: a resume in a new process, a kernel that dies, and it stays private.

The model is lmc's real llama.cpp path replaying recorded completions (tiny model), the
kernels are real and sandboxed as lmc runs them, and every value is checked from the model's
next block, as the model would see it.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from support.agent_testing import MakeInterpreter, python_call, shell_call
from support.replay import write_replay

from lmc.agent.kept_state import state_folder
from lmc.agent.storage import ConversationStore
from lmc.messages import Message, text_of
from lmc.paths import data_dir

ROOT = Path(__file__).resolve().parents[2]
FINAL = "<|channel|>final<|message|>{}<|return|>"

MAKE_STATE = """import numpy as np, socket
x = 41
arr = np.arange(12).reshape(3, 4)
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm2(self):
        return self.x ** 2 + self.y ** 2
p = Point(3, 4)
square = lambda n: n * n
def add_x(n):
    return n + x
sock = socket.socket()
gen = (i for i in range(3))
print("made")"""
USE_STATE = "print(x, arr.shape, p.norm2(), square(5), add_x(1), isinstance(p, Point), np.pi > 3)"
USED = "41 (3, 4) 25 25 42 True True"

CHILD = """
import sys
from lmc.agent import Interpreter

model, replay, db = sys.argv[1:4]
interpreter = Interpreter(model=model, replay=replay, db_path=db, auto_run=True)
interpreter.chat("make some state", display=False)
print(interpreter.conversation_id)
interpreter.close()
"""


def outputs(messages: list[Message]) -> list[str]:
    return [text_of(m) for m in messages if m["role"] == "computer" and m["type"] == "console"]


def test_a_resume_in_a_new_process_brings_the_variables_and_the_shell_back(
    tmp_path: Path, tiny_model: Path, make_interpreter: MakeInterpreter
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "conversations.db"
    replay = write_replay(
        tmp_path / "child.txt",
        [
            python_call(MAKE_STATE),
            shell_call("mkdir -p sub && cd sub && export GREETING='hello there'"),
            FINAL.format("Made."),
        ],
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tiny_model), str(replay), str(db)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
        check=True,
    )
    cid = done.stdout.split()[-1]

    resumed, backend = make_interpreter(
        [python_call(USE_STATE), shell_call('pwd; echo "$GREETING"'), FINAL.format("Back.")],
        conversation_id=cid,
        db_path=db,
        computer=None,  # its own kernels, as a new session has
        workdir=str(work),
        auto_run=True,
        context_size=16384,  # no compaction: the tools take ~3k tokens of the tiny vocabulary
    )
    # The model is told, before its next block, what comes back and what does not.
    note = text_of(resumed.messages[-1])
    assert "what the kernels saved after the last block is restored" in note
    assert "arr" in note and "Point" in note and "add_x" in note
    assert "but not gen (generator: cannot be pickled" in note and "sock (socket" in note
    assert f"working directory {work / 'sub'} and exports GREETING come back" in note

    new = resumed.chat("use it", display=False)
    assert note in backend.prompts[0]
    python_out, shell_out = outputs(new)
    assert USED in python_out
    assert python_out.startswith("[lmc: python state restored: Point, add_x, arr, np, p,")
    assert "not restored: gen (generator: cannot be pickled (TypeError))" in python_out
    assert f"{work / 'sub'}\nhello there" in shell_out
    assert "[lmc: shell state restored: working directory" in shell_out

    # Nothing of it in the working directory: only what the code made there.
    assert sorted(p.name for p in work.rglob("*")) == ["sub"]
    # All of it in the conversation's own private folder in lmc's data directory.
    folder = state_folder(db, cid)
    assert folder is not None and folder.is_relative_to(data_dir() / "kernel-state")
    checkpoints = data_dir() / "checkpoints"  # lmc's own record of its last snapshot is JSON
    kept = [
        p
        for p in tmp_path.rglob("*")
        if p.name.endswith((".pkl", ".json")) and not p.is_relative_to(checkpoints)
    ]
    assert kept and all(p.is_relative_to(folder) for p in kept)
    for path in [folder, *folder.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir() / "kernel-state").stat().st_mode) == 0o700

    # Deleting the conversation deletes its state.
    from lmc.cli.history import delete

    resumed.close()
    assert delete(str(db), cid) == 0
    assert not folder.exists()


def test_a_kernel_that_dies_comes_back_with_its_variables(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    interpreter, _ = make_interpreter(
        [
            python_call(MAKE_STATE),
            python_call("import os\nos._exit(7)"),
            python_call(USE_STATE),
            FINAL.format("Done."),
        ],
        computer=None,
        workdir=str(work),
        auto_run=True,
    )
    made, died, used = outputs(interpreter.chat("go", display=False))
    assert "made" in made
    assert "kernel died: it exited with status 7" in died
    assert "what was saved after the last block comes back in it" in died
    assert USED in used and "[lmc: python state restored:" in used


def test_turned_off_nothing_is_kept_or_restored(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    interpreter, _ = make_interpreter(
        [
            python_call("x = 41"),
            python_call("import os\nos._exit(7)"),
            python_call("print(x)"),
            FINAL.format("Done."),
        ],
        computer=None,
        workdir=str(work),
        auto_run=True,
        kernel_state=False,
    )
    _, died, used = outputs(interpreter.chat("go", display=False))
    assert "earlier variables and imports are gone" in died
    assert "NameError" in used
    assert not (data_dir() / "kernel-state").exists()


def test_code_cannot_see_another_conversations_state(
    make_interpreter: MakeInterpreter, tmp_path: Path
) -> None:
    """The sandbox binds one conversation's folder; the rest of lmc's data stays hidden.
    Without the sandbox the same attempt reads the other conversation's snapshot."""

    other = data_dir() / "kernel-state" / "0123456789ab" / "python"
    other.mkdir(parents=True)
    (other / "manifest.json").write_text('{"secret": 1}')
    probe = f"import os\nprint('seen' if os.path.exists({str(other)!r}) else 'hidden')"
    seen = []
    for sandbox in ("workspace", "off"):
        work = tmp_path / sandbox
        work.mkdir()
        interpreter, _ = make_interpreter(
            [python_call("x = 1"), python_call(probe), FINAL.format("Done.")],
            computer=None,
            db_path=None,  # the default: lmc's data directory
            workdir=str(work),
            sandbox=sandbox,
            auto_run=True,
        )
        seen.append(outputs(interpreter.chat("look", display=False))[-1].strip())
        cid = interpreter.conversation_id
        assert cid is not None
        # Its own snapshot was written all the same, into its own folder.
        assert (data_dir() / "kernel-state" / cid / "python" / "manifest.json").is_file()
        interpreter.close()
    assert seen == ["hidden", "seen"]
    with ConversationStore(data_dir() / "conversations.db") as store:
        assert len(store.list_conversations()) == 2
