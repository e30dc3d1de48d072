"""Every default-hidden secret, attacked from inside the real sandbox.

Each path the README promises to hide (written out here, so that an entry dropped from
:data:`DEFAULT_HIDDEN` fails), every newer entry of that list, and lmc's own data and config
folders are planted in a test HOME with a secret of their own (a folder gets a file holding
it). One sandboxed Python kernel then tries to read every one and
to write into it; the same code runs again with the sandbox off, where every read and write
succeeds, so each case can fail. The writes are checked from outside, on the host's files.
One process makes all the attempts; the test is parametrised over what it reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.sandbox_testing import Place, output_of

from lmc.computer import Computer
from lmc.computer.sandbox import find_tool
from lmc.computer.sandbox.policy import DEFAULT_HIDDEN

#: What the README promises stays hidden, written out here so that an entry dropped from
#: DEFAULT_HIDDEN fails its case (True: a folder on a real machine, planted with a file in it).
PROMISED: dict[str, bool] = {
    "~/.ssh": True, "~/.gnupg": True, "~/.aws": True, "~/.azure": True,
    "~/.config/gcloud": True, "~/.kube": True, "~/.docker/config.json": False,
    "~/.netrc": False, "~/.git-credentials": False, "~/.config/gh": True,
    "~/.config/hub": True, "~/.npmrc": False, "~/.yarnrc": False, "~/.pypirc": False,
    "~/.cargo/credentials": False, "~/.cargo/credentials.toml": False,
    "~/.gem/credentials": False, "~/.vault-token": False,
    "~/.terraform.d/credentials.tfrc.json": False, "~/.config/rclone": True, "~/.s3cfg": False,
    "~/.boto": False, "~/.cache/huggingface/token": False,
    "~/.cache/huggingface/stored_tokens": False, "~/.huggingface/token": False,
    "~/.config/op": True, "~/.local/share/keyrings": True, "~/.local/share/kwalletd": True,
    "~/.password-store": True, "~/.pki": True, "~/.config/keepassxc": True,
    "~/.bash_history": False, "~/.zsh_history": False, "~/.zhistory": False,
    "~/.histfile": False, "~/.local/share/fish/fish_history": False,
    "~/.python_history": False, "~/.node_repl_history": False, "~/.Rhistory": False,
    "~/.psql_history": False, "~/.mysql_history": False, "~/.sqlite_history": False,
    "~/.lesshst": False, "~/.viminfo": False, "~/.ipython/profile_default/history.sqlite": False,
    "~/.mozilla": True, "~/.librewolf": True, "~/.thunderbird": True,
    "~/.config/google-chrome": True, "~/.config/chromium": True,
    "~/.config/BraveSoftware": True, "~/.config/microsoft-edge": True,
    "~/.config/vivaldi": True, "~/.config/opera": True, "~/snap/firefox": True,
    "~/snap/chromium": True, "~/.screen": True,
    # lmc's own data (conversations, prompt history) and config, where the fixture puts them
    "~/.local/share/lmc": True, "~/.config/lmc": True,
}  # fmt: skip
#: Every entry attacked: the promised ones, and any newer entry of DEFAULT_HIDDEN (a file).
ENTRIES = (*PROMISED, *(e for e in DEFAULT_HIDDEN if e not in PROMISED))
FOLDERS = frozenset(e for e, folder in PROMISED.items() if folder)
PLANTED = "planted-by-the-model"
#: IPython's history schema (IPython/core/history.py, HistoryAccessor.init_db).
IPYTHON_HISTORY = """
CREATE TABLE sessions (session integer primary key autoincrement, start timestamp,
                       end timestamp, num_cmds integer, remark text);
CREATE TABLE history (session integer, line integer, source text, source_raw text,
                      PRIMARY KEY (session, line));
CREATE TABLE output_history (session integer, line integer, output text,
                             PRIMARY KEY (session, line));
"""
MARK = "ATTEMPTS:"

#: Reads every path (a folder: every file in it) and writes into it; prints one JSON line.
ATTACK = """
import json, os
found = {}
for path in PATHS:
    seen = []
    target = os.path.join(path, "planted") if os.path.isdir(path) else path
    try:
        if os.path.isdir(path):
            for root, _, files in os.walk(path):
                for name in files:
                    with open(os.path.join(root, name), errors="replace") as f:
                        seen.append(f.read())
        else:
            with open(path, errors="replace") as f:
                seen.append(f.read())
    except OSError as exc:
        seen.append("read: " + type(exc).__name__)
    try:
        with open(target, "a") as f:
            f.write(PLANTED)
        seen.append("wrote")
    except OSError as exc:
        seen.append("write: " + type(exc).__name__)
    found[path] = seen
print(MARK + json.dumps(found))
"""


@dataclass(frozen=True)
class Attempts:
    """What the sandboxed and the unsandboxed attacks read, and the host's files before and
    after each."""

    host_before: dict[str, str]
    contained: dict[str, list[str]]
    host_after_contained: dict[str, str]
    uncontained: dict[str, list[str]]
    host_after_uncontained: dict[str, str]


def secret_of(entry: str) -> str:
    return f"lmc-secret-{ENTRIES.index(entry)}-{entry.strip('~/').replace('/', '_')}"


def host_file(home: Path, entry: str) -> Path:
    path = home / entry.removeprefix("~/")
    return path / "secret" if entry in FOLDERS else path


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def plant(path: Path, secret: str) -> None:
    """The secret in a file; an SQLite history as IPython keeps it (the unsandboxed kernel
    opens its history database, and would set a file that is not one aside)."""
    if path.suffix != ".sqlite":
        path.write_text(secret)
        return
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executescript(IPYTHON_HISTORY)
        db.execute("INSERT INTO history VALUES (1, 1, ?, ?)", (secret, secret))


def host_state(home: Path) -> dict[str, str]:
    """Each entry's files as the host sees them (a folder: its file names and contents)."""
    state = {}
    for entry in ENTRIES:
        path = home / entry.removeprefix("~/")
        if entry in FOLDERS:
            state[entry] = repr(sorted((p.name, _text(p)) for p in path.iterdir()))
        else:
            state[entry] = _text(path)
    return state


def attempt(computer: Computer, paths: list[str]) -> dict[str, list[str]]:
    code = f"PATHS = {paths!r}\nPLANTED = {PLANTED!r}\nMARK = {MARK!r}\n{ATTACK}"
    out = output_of(computer, "python", code)
    line = next((x for x in out.splitlines() if x.startswith(MARK)), None)
    assert line is not None, out
    found: dict[str, list[str]] = json.loads(line.removeprefix(MARK))
    return found


@pytest.fixture(scope="module")
def attempts(place: Place) -> Attempts:
    if not find_tool().usable:
        pytest.fail(f"no working sandbox on this machine: {find_tool().problem}")
    home = place.home
    for entry in ENTRIES:
        planted = host_file(home, entry)
        planted.parent.mkdir(parents=True, exist_ok=True)
        plant(planted, secret_of(entry))
    paths = [os.path.expanduser(entry) for entry in ENTRIES]
    assert all(p.startswith(str(home)) for p in paths)  # the test HOME, never the real one
    before = host_state(home)
    with pytest.MonkeyPatch.context() as patch:  # lmc's own folders, in the test HOME
        patch.setenv("LMC_DATA_DIR", str(home / ".local/share/lmc"))
        patch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        patch.delenv("LMC_CONFIG", raising=False)
        with Computer(sandbox="workspace", workdir=place.work) as computer:
            contained = attempt(computer, paths)
        after_contained = host_state(home)
        with Computer(sandbox="off", workdir=place.work) as computer:
            uncontained = attempt(computer, paths)
    return Attempts(before, contained, after_contained, uncontained, host_state(home))


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_default_hidden_secret_cannot_be_read_or_written_from_inside(
    entry: str, attempts: Attempts
) -> None:
    path, secret = os.path.expanduser(entry), secret_of(entry)
    seen = attempts.contained[path]
    assert not any(secret in text for text in seen), (entry, seen)
    assert "wrote" not in seen, (entry, seen)
    assert attempts.host_after_contained[entry] == attempts.host_before[entry]
    # The same attempt without the sandbox reads the secret and writes beside it.
    assert any(secret in text for text in attempts.uncontained[path]), entry
    assert "wrote" in attempts.uncontained[path], entry
    assert PLANTED in attempts.host_after_uncontained[entry], entry
