"""The policy, the command lines it becomes, the explanation line, and what happens where no
sandbox tool is installed (a real PATH without bwrap, not a mock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc.computer import Computer
from lmc.computer.sandbox import (
    PREFIX,
    SandboxPolicy,
    check_mode,
    explain_block,
    find_tool,
    lacked_by,
    resolve_policy,
)
from lmc.computer.sandbox.bubblewrap import bwrap_command
from lmc.computer.sandbox.seatbelt import seatbelt_profile
from lmc.errors import ConfigError, SandboxUnavailableError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_modes_are_checked() -> None:
    assert check_mode("Read_Only") == "read-only"
    assert check_mode("workspace") == "workspace"
    with pytest.raises(ConfigError, match="off, workspace, read-only"):
        check_mode("container")


def test_bwrap_seals_home_binds_the_workdir_and_hides_secrets(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".ssh").mkdir(parents=True)  # a secret's name inside the workdir: not hidden
    (home / "notes.txt").write_text("n")
    policy = SandboxPolicy("workspace", network=False, workdir=work, hide=(str(home / "x"),))
    argv = bwrap_command("/usr/bin/bwrap", policy, ["kernel", "-f", "c.json"], shared=[home])
    joined = " ".join(argv)
    assert argv[:3] == ["env", "--ignore-signal=INT", "/usr/bin/bwrap"]
    assert "--ro-bind / /" in joined and "--unshare-net" in argv and "--unshare-pid" in argv
    assert "--die-with-parent" in argv and "--cap-drop ALL" in joined
    assert "--unshare-user" in argv and "--new-session" in argv
    assert f"--bind {work} {work}" in joined
    seal = joined.index(f"--tmpfs {home} ")
    notes = joined.index(f"--ro-bind-try {home / 'notes.txt'} {home / 'notes.txt'}")
    assert seal < notes and f"--bind {home} {home}" in joined
    assert f"{home / '.ssh'} " not in joined and str(home / ".netrc") not in joined
    assert joined.endswith(f"--remount-ro {home} --unsetenv" + joined.split("--unsetenv", 1)[1])
    assert argv[-5:] == ["env", "--default-signal=INT", "kernel", "-f", "c.json"]


def test_read_only_and_network_change_the_command(tmp_path: Path) -> None:
    policy = SandboxPolicy("read-only", network=True, workdir=tmp_path)
    argv = bwrap_command("bwrap", policy, ["k"])
    assert "--unshare-net" not in argv
    assert f"--bind {tmp_path} {tmp_path}" not in " ".join(argv)


def test_the_seatbelt_profile_follows_the_policy(home: Path, tmp_path: Path) -> None:
    profile = seatbelt_profile(SandboxPolicy("workspace", False, tmp_path))
    assert "(deny file-write*)" in profile and f'(subpath "{tmp_path}")' in profile
    assert f'(subpath "{home / ".ssh"}")' in profile and "(deny network*)" in profile
    assert "(deny network*)" not in seatbelt_profile(SandboxPolicy("workspace", True, tmp_path))


@pytest.mark.parametrize(
    ("output", "word"),
    [
        ("OSError: [Errno 30] Read-only file system: '/etc/x'", "write"),
        ("Error: EROFS: read-only file system, open '/x'", "write"),
        ("ConnectionRefusedError: [Errno 111] Connection refused", "network"),
        ("curl: (6) Could not resolve host: example.com", "network"),
        ("OSError: [Errno 101] Network is unreachable", "network"),
        ("“127.0.0.1:8080 cannot be opened”", "network"),
    ],
)
def test_the_explanation_names_what_was_blocked(output: str, word: str, tmp_path: Path) -> None:
    line = explain_block(output, SandboxPolicy("workspace", False, tmp_path))
    assert line is not None and line.startswith(PREFIX) and word in line
    assert explain_block(output, SandboxPolicy("off", False, tmp_path)) is None


def test_the_explanation_stays_silent_when_the_sandbox_played_no_part(tmp_path: Path) -> None:
    policy = SandboxPolicy("workspace", False, tmp_path)
    assert explain_block("FileNotFoundError: [Errno 2] No such file: 'data.csv'", policy) is None
    assert explain_block("hello\n", policy) is None
    networked = SandboxPolicy("workspace", True, tmp_path)
    assert explain_block("Connection refused", networked) is None


def test_a_hidden_secret_is_named(home: Path, tmp_path: Path) -> None:
    policy = SandboxPolicy("workspace", False, tmp_path)
    out = f"cat: {home}/.ssh/id_rsa: No such file or directory"
    line = explain_block(out, policy)
    assert line is not None and "~/.ssh is hidden" in line


def test_what_a_blocked_block_lacked(home: Path, tmp_path: Path) -> None:
    strict = SandboxPolicy("workspace", False, tmp_path)
    assert lacked_by("ConnectionRefusedError: [Errno 111] Connection refused", strict) == "network"
    assert lacked_by("OSError: [Errno 30] Read-only file system: '/etc/x'", strict) == "unsandboxed"
    hidden = f"cat: {home}/.ssh/id_rsa: No such file or directory"
    assert lacked_by(hidden, strict) == "unsandboxed"
    # Nothing to give: a limit, an ordinary missing file, a sandbox with the network or none.
    assert lacked_by("BlockingIOError: Resource temporarily unavailable", strict) is None
    assert lacked_by("FileNotFoundError: [Errno 2] No such file: 'data.csv'", strict) is None
    assert lacked_by("Connection refused", SandboxPolicy("workspace", True, tmp_path)) is None
    assert lacked_by("Read-only file system", SandboxPolicy("off", False, tmp_path)) is None


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real PATH on which there is no bwrap (nor anything else)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.usefixtures("no_bwrap")
def test_without_a_tool_the_default_falls_back_with_a_warning(tmp_path: Path) -> None:
    assert not find_tool().usable
    policy, warning = resolve_policy(None, workdir=tmp_path)
    assert policy.mode == "off"
    assert warning is not None and "bubblewrap" in warning and "apt-get install" in warning
    with pytest.raises(SandboxUnavailableError, match="not installed"):
        resolve_policy("workspace", workdir=tmp_path)
    with pytest.raises(SandboxUnavailableError):
        Computer(sandbox="read-only")
    with pytest.warns(RuntimeWarning, match="without a sandbox"):
        Computer().close()
    assert resolve_policy("off")[1] is None


def test_with_the_tool_the_default_is_workspace(tmp_path: Path) -> None:
    assert find_tool().usable, find_tool().problem
    policy, warning = resolve_policy(None, workdir=tmp_path)
    assert (policy.mode, policy.network, policy.workdir, warning) == (
        "workspace",
        False,
        tmp_path.resolve(),
        None,
    )
