"""What lives on the host stays out of reach: Unix sockets (an agent, a runtime folder,
/run), another lmc session's kernel (its connection file and sockets, even when the
temporary directory is the working directory), and secrets created after the sandbox
started. Each attempt is real, checked from outside, and works with the sandbox off."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.sandbox_testing import FAKE_KEY, Place, greeting, output_of, read_code

from lmc.computer import Computer
from lmc.computer.sandbox import resolve_policy
from lmc.errors import ConfigError


@contextmanager
def unix_server(path: Path) -> Iterator[Path]:
    """A Unix socket server at ``path`` that greets each connection with ``agent-hello``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    try:
        with greeting(server, b"agent-hello\n"):
            yield path
    finally:
        path.unlink(missing_ok=True)


def connect_code(language: str, path: Path) -> str:
    python = (
        "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        f"s.settimeout(5)\ns.connect({str(path)!r})\nprint(s.recv(100).decode())"
    )
    if language == "python":
        return python
    return f"timeout 5 python3 - <<'EOF'\n{python}\nEOF"


@pytest.fixture(scope="module")
def sockets(place: Place) -> Iterator[dict[str, Path]]:
    runtime = place.root / "run-user"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(runtime))
        patch.setenv("SSH_AUTH_SOCK", str(place.root / "agent" / "ssh.sock"))
        with (
            unix_server(runtime / "bus") as bus,
            unix_server(place.root / "agent" / "ssh.sock") as agent,
            unix_server(Path("/run") / f"lmc-test-{place.root.name}.sock") as run,
            unix_server(place.home / "tmux.sock") as in_home,
        ):
            yield {"runtime": bus, "agent": agent, "run": run, "home": in_home}


@pytest.mark.parametrize("language", ["python", "shell"])
@pytest.mark.parametrize("which", ["runtime", "agent", "run", "home"])
def test_a_host_unix_socket_cannot_be_reached(
    which: str, language: str, place: Place, sockets: dict[str, Path]
) -> None:
    code = connect_code(language, sockets[which])
    with Computer(sandbox="workspace", workdir=place.work) as contained:
        assert "agent-hello" not in output_of(contained, language, code)
    with Computer(sandbox="off", workdir=place.work) as uncontained:
        assert "agent-hello" in output_of(uncontained, language, code)


HIJACK = """
import glob, os
from ipykernel import get_connection_file
own = os.path.realpath(get_connection_file())
found = [p for p in glob.glob({pattern!r}) if os.path.realpath(p) != own]
print('found', len(found))
from jupyter_client import BlockingKernelClient
for path in found:
    client = BlockingKernelClient(connection_file=path)
    client.load_connection_file()
    client.start_channels()
    client.execute({payload!r})
    client.get_shell_msg(timeout=15)
    client.stop_channels()
"""


@pytest.mark.parametrize("tmpdir", ["elsewhere", "workdir"])
def test_another_sessions_kernel_is_invisible_and_cannot_be_driven(
    tmpdir: str, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Session B runs an unsandboxed kernel; code in session A looks for B's connection
    files and uses them to run code there (outside any sandbox)."""
    base = place.work if tmpdir == "workdir" else place.root / "tmp"
    base.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    marker = place.outside / f"hijacked-{tmpdir}.txt"
    payload = f"open({str(marker)!r}, 'w').write('x')"
    code = HIJACK.format(pattern=f"{base}/lmc-*/s-*/k-*/kernel.json", payload=payload)
    with Computer(sandbox="off", workdir=place.work) as victim:
        assert output_of(victim, "python", "print('b')") == "b\n"
        with Computer(sandbox="workspace", workdir=place.work) as attacker:
            out = output_of(attacker, "python", code)
            assert "found 0" in out and not marker.exists(), out
        with Computer(sandbox="off", workdir=place.work) as unsandboxed:
            out = output_of(unsandboxed, "python", code)
            assert not out.startswith("found 0") and marker.exists(), out
    marker.unlink()


@pytest.mark.parametrize("language", ["python", "shell"])
def test_a_secret_created_after_the_start_stays_hidden(
    language: str, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = place.home / f".aws-{language}"
    monkeypatch.setenv("HOME", str(place.home))
    with (
        Computer(
            sandbox="workspace", workdir=place.work, hide=(f"~/.aws-{language}", "~/keys-*.txt")
        ) as contained,
        Computer(sandbox="off", workdir=place.work) as uncontained,
    ):
        assert output_of(contained, language, "print(1)" if language == "python" else "echo 1")
        later.mkdir()
        (later / "credentials").write_text(FAKE_KEY)
        (place.home / f"keys-{language}.txt").write_text(FAKE_KEY)
        for path in (later / "credentials", place.home / f"keys-{language}.txt"):
            assert FAKE_KEY not in output_of(contained, language, read_code(language, path))
            assert FAKE_KEY in output_of(uncontained, language, read_code(language, path))


@pytest.mark.parametrize("entry", ["secrets.txt", "", "~nosuchuser/x", "/"])
def test_an_unusable_hide_entry_is_an_error(entry: str, place: Place) -> None:
    with pytest.raises(ConfigError, match=r"sandbox\.hide"):
        resolve_policy("workspace", workdir=place.work, hide=(entry,))


def test_a_glob_in_hide_hides_what_matches(place: Place, contained: Computer) -> None:
    secret = place.home / "token-glob.txt"
    secret.write_text(FAKE_KEY)
    with Computer(sandbox="workspace", workdir=place.work, hide=("~/token-*",)) as computer:
        assert FAKE_KEY not in output_of(computer, "python", read_code("python", secret))
    assert FAKE_KEY in output_of(contained, "python", read_code("python", secret))


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("language", ["python", "shell"])
def test_a_listening_socket_deep_in_a_read_only_folder_cannot_be_reached(
    language: str, network: bool, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host socket nested in /var/tmp (a folder the sandbox shows read-only: connect()
    ignores read-only mounts). With the network on, every bound socket is masked at the
    kernel's start; without it, the connect guard refuses it
    (tests/computer/sandbox/test_connect_guard.py). With the mask off (the list of bound
    sockets emptied) and the guard off the same code connects from the sandbox."""
    from lmc.computer.sandbox import connect_guard, masks

    deep = place.root / f"service-{language}-{network}" / "sockets" / "listen.sock"
    code = connect_code(language, deep)
    with unix_server(deep):
        with Computer(sandbox="workspace", workdir=place.work, network=network) as contained:
            assert "agent-hello" not in output_of(contained, language, code)
        monkeypatch.setattr(masks, "bound_sockets", lambda *a, **k: [])
        monkeypatch.setattr(connect_guard, "guard_connects", lambda: False)
        with Computer(sandbox="workspace", workdir=place.work, network=network) as unmasked:
            assert "agent-hello" in output_of(unmasked, language, code)


def test_bound_sockets_come_from_the_kernels_table(tmp_path: Path) -> None:
    from lmc.computer.sandbox.masks import bound_sockets

    table = tmp_path / "unix"
    table.write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000: 00000002 00000000 00010000 0001 01 1 /var/tmp/a b.sock\n"
        "0000: 00000002 00000000 00010000 0001 01 2 @abstract\n"
        "0000: 00000003 00000000 00000000 0001 03 3\n"
    )  # the layout of Linux's net/unix/af_unix.c unix_seq_show
    assert bound_sockets(table) == [Path("/var/tmp/a b.sock")]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can bind in another user's folder")
def test_a_socket_in_another_users_private_folder_does_not_stop_the_start(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root's sandbox (a user namespace) cannot enter a folder of a user it does not map: a
    mask over a socket in there failed the kernel's start ("Can't mkdir parents ...:
    Permission denied"). Such a socket is left alone (the code cannot reach it either); with
    the check off the start fails as it did."""
    from lmc.computer.sandbox import masks

    private = place.root / f"private-{os.getpid()}"
    private.mkdir()
    with unix_server(private / "in" / "listen.sock"):
        os.chown(private, 65534, 65534)
        private.chmod(0o700)
        with Computer(sandbox="workspace", workdir=place.work, network=True) as contained:
            assert "ok" in output_of(contained, "python", "print('ok')")
        monkeypatch.setattr(masks, "_searchable_unprivileged", lambda path: True)
        with Computer(sandbox="workspace", workdir=place.work, network=True) as unchecked:
            failed = output_of(unchecked, "python", "print('ok')")
        assert "failed to start" in failed and "Permission denied" in failed
        os.chown(private, 0, 0)


def test_other_sessions_runtime_folders_are_covered_whole(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sockets of other users' lmc sessions (``lmc-UID`` beside this user's folder) come and
    go: each was masked one by one, and one that vanished before bubblewrap mounted over it
    failed the start. The folders are covered whole: the code sees them empty (with only
    this user's folder covered, as before, it sees what is in them)."""
    from lmc.computer.runtime import runtime_root
    from lmc.computer.sandbox import masks

    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp")  # shown read-only, as TMPDIR may be
    other = runtime_root().parent / f"lmc-{os.getpid() + 100000}"
    other.mkdir(exist_ok=True)
    listing = f"import os; print(os.listdir({str(other)!r}))"
    try:
        (other / "secret").write_text("theirs")
        with Computer(sandbox="workspace", workdir=place.work, network=True) as contained:
            seen = output_of(contained, "python", listing)
        assert "[]" in seen and "secret" not in seen
        own_only = masks._runtime_roots
        monkeypatch.setattr(masks, "_runtime_roots", lambda root: own_only(root)[:1])
        with Computer(sandbox="workspace", workdir=place.work, network=True) as uncovered:
            assert "secret" in output_of(uncovered, "python", listing)
    finally:
        (other / "secret").unlink()
        other.rmdir()
