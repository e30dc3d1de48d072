"""Kernel state at the Computer's level: what a snapshot rewrites, the caps, a restart on
request, the shell's directory and exports, and lmc reading what the kernel wrote.

Real kernels in lmc's sandbox; the state folder is in lmc's (hidden) data directory, as the
Interpreter puts it.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer
from lmc.computer.state import KernelState, listing, restore_note, saved_summary


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KernelState:
    monkeypatch.setenv("LMC_DATA_DIR", str(tmp_path / "data"))
    return KernelState(tmp_path / "data" / "kernel-state" / "c0ffee", max_value=100_000)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


@pytest.fixture
def computer(state: KernelState, work: Path) -> Iterator[Computer]:
    with Computer(workdir=work, state=state) as made:
        yield made


def run(computer: Computer, language: str, code: str) -> str:
    return output_of(collect(computer, language, code))


def files(state: KernelState) -> dict[str, tuple[int, str]]:
    """name -> (inode of its file, file), from the python manifest."""
    manifest = json.loads((state.folder / "python" / "manifest.json").read_text())
    folder = state.folder / "python"
    return {
        name: (os.stat(folder / entry["file"]).st_ino, entry["file"])
        for name, entry in manifest["kept"].items()
    }


def test_only_what_changed_is_written_again(computer: Computer, state: KernelState) -> None:
    run(
        computer,
        "python",
        "import numpy as np\nbig = list(range(5000))\narr = np.ones(1000)\ny = 1",
    )
    first = files(state)
    run(computer, "python", "y = 2")
    second = files(state)
    assert second["big"] == first["big"] and second["arr"] == first["arr"]
    assert second["y"][0] != first["y"][0]
    run(computer, "python", "big.append(1)\narr[500] = 7")  # in place: same objects
    third = files(state)
    assert third["big"][0] != second["big"][0] and third["arr"][0] != second["arr"][0]
    run(computer, "python", "del big")
    assert "big" not in files(state)
    assert not (state.folder / "python" / first["big"][1]).exists()


def test_values_over_the_caps_are_listed_as_not_kept(
    computer: Computer, state: KernelState
) -> None:
    run(computer, "python", "small = b'x' * 10\nhuge = b'x' * 200_000")
    summary = saved_summary(state.folder)["python"]
    assert "small" in summary and "huge (bytes: over the cap of 100000 bytes per value)" in summary
    computer.restart("python")  # on request: a fresh kernel, nothing restored
    assert "NameError" in run(computer, "python", "small")
    assert restore_note(state.folder, "python") is None


def test_a_restored_kernel_says_what_came_back_and_the_listing_shows_shapes(
    computer: Computer, state: KernelState
) -> None:
    run(
        computer,
        "python",
        "import numpy as np\narr = np.zeros((3, 4))\nxs = [1, 2]\nf = open('/dev/null')",
    )
    text = listing(state.folder)
    assert text is not None
    assert "arr: ndarray 3×4" in text and "xs: list of 2" in text and "np: module numpy" in text
    assert "f (TextIOWrapper: cannot be pickled (TypeError))" in text
    died = run(computer, "python", "import os\nos._exit(1)")
    assert "what was saved after the last block comes back in it" in died
    back = run(computer, "python", "print(arr.shape, xs)")
    assert back.startswith("[lmc: python state restored: arr, np, xs; not restored: f (")
    assert "(3, 4) [1, 2]" in back


def test_the_shell_comes_back_where_it_was_with_its_exports(
    computer: Computer, state: KernelState, work: Path
) -> None:
    (work / "a b").mkdir()
    run(computer, "shell", "cd 'a b' && export ODD=$'two\\nlines \"q\" $x' PLAIN=1 && unset LANG")
    computer.restart("shell")  # on request: fresh, in the working directory
    assert run(computer, "shell", "pwd").strip() == str(work)
    run(computer, "shell", "cd 'a b' && export ODD=$'two\\nlines \"q\" $x' PLAIN=1 && unset LANG")
    run(computer, "shell", "kill -9 $PPID")  # the kernel dies
    back = run(computer, "shell", 'pwd; printf "%s|" "$ODD" "$PLAIN" "${LANG-unset}"')
    assert f"working directory {work / 'a b'}, exports ODD, PLAIN]" in back
    assert back.endswith(f'{work / "a b"}\ntwo\nlines "q" $x|1|unset|')
    # A directory that is gone: the exports come back, the kernel starts in the usual place.
    (work / "a b").rmdir()
    run(computer, "shell", "kill -9 $PPID")
    back = run(computer, "shell", "pwd")
    assert "not the working directory" in back and back.endswith(f"{work}\n")


def test_what_the_kernel_wrote_is_read_with_care(state: KernelState) -> None:
    """The JSON comes from code the model wrote: junk, huge or escape-laden, it never
    breaks lmc nor reaches the terminal."""
    python = state.folder / "python"
    python.mkdir(parents=True)
    (python / "restored.json").write_text("[not an object")
    assert restore_note(state.folder, "python") is None
    report = {"restored": ["ok", "\x1b[2Jboom", 5], "failed": {"x": "\x1b]0;t\x07why"}}
    (python / "restored.json").write_text(json.dumps(report))
    note = restore_note(state.folder, "python")
    assert note is not None and "\x1b" not in note and "boom" not in note
    assert "ok" in note and "x (]0;twhy)" in note
    (python / "manifest.json").write_text(json.dumps({"kept": 7, "modules": [], "lost": "z"}))
    assert listing(state.folder) is None and saved_summary(state.folder) == {
        "python": "its variables come back (none were saved)"
    }
    (python / "manifest.json").write_bytes(b"{" + b" " * (5 * 1024 * 1024) + b"}")
    assert listing(state.folder) is None


def test_a_link_the_code_made_in_its_state_folder_leads_lmc_nowhere(
    computer: Computer, state: KernelState, work: Path
) -> None:
    """The code may write its state folder: it replaces ``python/`` with a link to a folder
    of the person's (here, in the working directory). lmc neither reads nor removes what
    the link points at; following the path plainly would have done both."""
    outside = work / "outside"
    outside.mkdir()
    (outside / "restored.json").write_text(json.dumps({"restored": ["planted"]}))
    python = state.folder / "python"
    run(
        computer,
        "python",
        f"import os, shutil\nshutil.rmtree({str(python)!r}, ignore_errors=True)\n"
        f"os.symlink({str(outside)!r}, {str(python)!r})",
    )
    assert python.is_symlink()  # the attempt, seen from outside
    assert restore_note(state.folder, "python") is None
    assert listing(state.folder) is None
    assert (outside / "restored.json").exists()
    # The unprotected way: the plain path goes through the link.
    assert "planted" in (python / "restored.json").read_text()


def test_what_cannot_come_back_is_named_and_the_rest_comes_back(
    computer: Computer, state: KernelState, work: Path
) -> None:
    """A module of the working directory that is gone by the restore, and a value that
    refers to a global that was not kept: both named, everything else restored; a sandbox
    change restores too."""
    (work / "mymod.py").write_text("VALUE = 5\n")
    run(
        computer,
        "python",
        "import sys, threading\nsys.path.insert(0, '.')\nimport mymod\n"
        "lock = threading.Lock()\nholder = {'lock': lock}\nplain = [1, 2]\nsame = plain",
    )
    (work / "mymod.py").unlink()
    lost = computer.set_sandbox(computer.sandbox.mode, network=True)
    assert lost == ["python"]
    back = run(computer, "python", "print(plain is same, plain)")
    assert "what was saved after the last block comes back" in back
    assert "[lmc: python state restored: plain, same, sys, threading; not restored: " in back
    assert "lock (lock: cannot be pickled (TypeError))" in back
    assert "holder (cannot be unpickled (UnpicklingError: lock: not kept))" in back
    assert "mymod (module mymod cannot be imported (ModuleNotFoundError))" in back
    assert back.endswith("True [1, 2]\n")


def test_a_shell_that_exits_starts_again_where_it_was(
    computer: Computer, state: KernelState, work: Path
) -> None:
    (work / "sub").mkdir()
    run(computer, "shell", "cd sub && export KEPT=yes")
    ended = output_of(collect(computer, "shell", "exit 3"))
    assert "the next run starts a new shell" in ended
    back = run(computer, "shell", 'pwd; echo "$KEPT"')
    assert back.startswith("[lmc: shell state restored: working directory")
    assert back.endswith(f"{work / 'sub'}\nyes\n")


def test_a_value_whose_restore_kills_the_kernel_is_not_tried_twice(
    computer: Computer, state: KernelState
) -> None:
    run(
        computer,
        "python",
        "import os\nclass Boom:\n    def __reduce__(self):\n        return (os._exit, (9,))\n"
        "boom = Boom()\nsafe = 5",
    )
    run(computer, "python", "import os\nos._exit(1)")
    failed = run(computer, "python", "print('unreachable')")  # its restore ends the kernel
    assert "failed to start" in failed and "unreachable" not in failed
    back = run(computer, "python", "print('fresh', 'safe' in dir())")
    assert "the last restore ended the kernel; this one started fresh" in back
    assert back.endswith("fresh False\n")


def test_the_rest_of_the_data_directory_stays_hidden_and_read_only(
    state: KernelState, work: Path, tmp_path: Path
) -> None:
    """Binding the state folder into the hidden data directory leaves the rest of it an
    empty read-only cover: the code cannot plant a file there (it can, unsandboxed)."""
    data = tmp_path / "data"
    (data / "conversations.db").parent.mkdir(parents=True, exist_ok=True)
    (data / "conversations.db").write_text("private")
    probe = (
        f"import os\nprint(sorted(os.listdir({str(data)!r})))\n"
        f"try:\n    open({str(data / 'planted')!r}, 'w').close()\n    print('planted')\n"
        "except OSError as exc:\n    print('refused', exc.errno)"
    )
    said = []
    for sandbox in ("workspace", "off"):
        with Computer(workdir=work, state=state, sandbox=sandbox) as computer:
            said.append(run(computer, "python", probe))
        if sandbox == "workspace":
            assert not (data / "planted").exists()
    assert said[0] == f"['kernel-state']\nrefused {errno.EROFS}\n"  # the database unseen
    assert said[1].endswith("planted\n") and (data / "planted").exists()
