"""The kernels of one session share one network namespace: a server started from the python
kernel is reachable from the shell kernel with the network off, and from nowhere else (the
host, another session). With the sandbox off the same server is reachable from the host: the
isolation is the sandbox's.

The server is real (``http.server`` in a thread of the python kernel); the host side connects
with a plain socket; the holder of the namespace is found from outside by its pid.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.computer_testing import collect, output_of

from lmc.computer import Computer
from lmc.computer.sandbox import find_tool

pytestmark = pytest.mark.skipif(not find_tool().usable, reason="no working sandbox tool")

SERVER = (
    "import http.server, threading\n"
    "server = http.server.ThreadingHTTPServer(('127.0.0.1', {port}), "
    "http.server.SimpleHTTPRequestHandler)\n"
    "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
    "print('serving')"
)
CURL = "curl -s -o /dev/null -w '%{{http_code}}\\n' http://127.0.0.1:{port}/ || echo failed"


def _port() -> int:
    return 20000 + secrets.randbelow(30000)


def _host_reaches(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        return True
    return False


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Computer]:
    with Computer(workdir=tmp_path, sandbox="workspace", network=False) as computer:
        yield computer


def test_a_server_in_python_is_reached_from_the_shell_but_not_the_host(
    session: Computer, tmp_path: Path
) -> None:
    port = _port()
    assert output_of(collect(session, "python", SERVER.format(port=port))) == "serving\n"
    assert output_of(collect(session, "shell", CURL.format(port=port))) == "200\n"
    assert not _host_reaches(port)
    # Another session has a loopback of its own.
    with Computer(workdir=tmp_path, sandbox="workspace", network=False) as other:
        assert output_of(collect(other, "shell", CURL.format(port=port))) == "000\nfailed\n"


def test_the_holder_ends_with_the_computer(tmp_path: Path) -> None:
    with Computer(workdir=tmp_path, sandbox="workspace", network=False) as computer:
        collect(computer, "shell", "true")
        network = computer._network
        assert network is not None and network.holder_pid is not None
        holder = network.holder_pid
        assert Path(f"/proc/{holder}").exists()
    deadline = time.monotonic() + 30
    while Path(f"/proc/{holder}").exists() and not _zombie(holder):
        assert time.monotonic() < deadline, "the holder outlived its computer"
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True


def test_without_the_sandbox_the_host_reaches_the_server(tmp_path: Path) -> None:
    port = _port()
    with Computer(workdir=tmp_path, sandbox="off") as computer:
        assert output_of(collect(computer, "python", SERVER.format(port=port))) == "serving\n"
        assert _host_reaches(port)


def test_the_holder_is_found_from_bwraps_own_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap names its child on ``--info-fd`` once the namespaces exist: the holder is known
    at once, without watching /proc (the old way, a poll of 10 ms on every session's first
    kernel start, is kept only for a bwrap that reports nothing)."""
    from lmc.computer.sandbox import shared_net

    def no_polling(process: object) -> None:
        raise AssertionError("the holder was looked for in /proc")

    monkeypatch.setattr(shared_net, "_child_of", no_polling)
    network = shared_net.SharedNetwork.find()
    assert network is not None
    try:
        prefix = network.join_prefix()
        holder = network.holder_pid
        assert holder is not None and prefix[prefix.index("-t") + 1] == str(holder)
        own = Path("/proc/self/ns/net").readlink()
        assert Path(f"/proc/{holder}/ns/net").readlink() != own  # in a namespace of its own
        status = Path(f"/proc/{holder}/status").read_text()
        parent = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        assert Path(f"/proc/{parent}/comm").read_text().strip() == "bwrap"  # bwrap's own child
    finally:
        network.close()


def test_without_a_holder_each_kernel_has_a_network_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder that cannot start (here: bwrap fails at once) leaves the kernel's launch,
    prepared meanwhile, to make a namespace of its own: the network stays off, the host
    reaches nothing, and python's server is not the shell's (no shared loopback)."""
    from lmc.computer.sandbox import shared_net

    def failing(self: shared_net.SharedNetwork) -> None:
        self._bwrap = "/bin/false"
        spawn(self)

    spawn = shared_net.SharedNetwork._spawn
    monkeypatch.setattr(shared_net.SharedNetwork, "_spawn", failing)
    port = _port()
    with Computer(workdir=tmp_path, sandbox="workspace", network=False) as computer:
        assert output_of(collect(computer, "python", SERVER.format(port=port))) == "serving\n"
        assert output_of(collect(computer, "shell", CURL.format(port=port))) == "000\nfailed\n"
        network = computer._network
        assert network is not None and network.holder_pid is None
        assert not _host_reaches(port)
