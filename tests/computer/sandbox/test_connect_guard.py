"""With the network off, a host Unix socket bound *after* a kernel started, in a folder the
sandbox shows read-only, cannot be reached: lmc makes every connect() itself (seccomp user
notification) and refuses a socket on a read-only mount. Each attempt is real, made from
inside a running kernel; what reached the host is checked at the host's listener; and the
same attempt succeeds with the guard off (``connect_guard.guard_connects`` made False: the
kernel starts without the step that puts the filter on)."""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.sandbox_testing import LANGUAGES, Place, output_of, read_code, wait_until

from lmc.computer import Computer
from lmc.computer.sandbox import connect_guard, masks, resolve_policy
from lmc.computer.sandbox.report import protections
from lmc.messages import text_of

START = {"python": "print('up')", "shell": "echo up", "javascript": "console.log('up')"}


def connect_code(language: str, path: Path | str) -> str:
    """Code that connects to the Unix socket ``path``, sends ``intruder`` and says how it went:
    ``connected``, or ``refused`` with the error."""
    python = (
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.settimeout(10)\ntry:\n"
        f"    s.connect({str(path)!r}); s.sendall(b'intruder'); print('connected')\n"
        "except OSError as e:\n    print('refused', e.errno, e.strerror)\ns.close()"
    )
    if language == "python":
        return python
    if language == "shell":
        return f"timeout 20 python3 - <<'EOF'\n{python}\nEOF"
    return (
        "const said = await new Promise((done) => {\n"
        f"  const s = require('net').connect({str(path)!r});\n"
        "  s.on('connect', () => s.end('intruder', () => done('connected')));\n"
        "  s.on('error', (e) => done('refused ' + e.code));\n"
        "});\nconsole.log(said);"
    )


@contextmanager
def host_listener(path: Path) -> Iterator[socket.socket]:
    """A listening Unix socket lmc's host binds at ``path`` (never accepting by itself)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen()
    try:
        yield server
    finally:
        server.close()
        path.unlink(missing_ok=True)


def nothing_arrived(server: socket.socket) -> bool:
    """No connection is waiting: the code's connect has returned, so one made would be
    queued already."""
    server.setblocking(False)
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return True
    connection.close()
    return False


def received(server: socket.socket) -> bytes:
    server.settimeout(30)
    connection, _ = server.accept()
    with connection:
        connection.settimeout(30)
        return connection.recv(100)


def unguard(patch: pytest.MonkeyPatch) -> None:
    """Kernels start without the guard's step. The masks over the sockets bound at the start
    (what lmc does without the guard) go too: they play no part for a socket bound later, and
    one over a socket of a busy host that vanishes before bwrap starts fails the start."""
    patch.setattr(connect_guard, "guard_connects", lambda: False)
    patch.setattr(masks, "bound_sockets", lambda *a, **k: [])


@pytest.fixture
def guard_off(monkeypatch: pytest.MonkeyPatch) -> None:
    unguard(monkeypatch)


def socket_path(place: Place, where: str, name: str) -> Path:
    """Where the host binds: a fresh folder in /var/tmp (made after the start) or a folder
    of the home folder (sealed: only what exists at the start is shown)."""
    if where == "home":
        folder = place.home / f"projects-{name}"
        folder.mkdir(exist_ok=True)
        return folder / "listen.sock"
    return place.root / f"later-{name}" / "listen.sock"


@pytest.mark.parametrize("language", ["python", "javascript"])
def test_the_model_is_told_why(language: str, place: Place, contained: Computer) -> None:
    """A refused connect that the code did not catch ends in the sandbox's line."""
    path = place.root / f"later-told-{language}" / "listen.sock"
    assert output_of(contained, language, START[language]) == "up\n"
    bare = {
        "python": f"import socket\nsocket.socket(socket.AF_UNIX).connect({str(path)!r})",
        "javascript": (
            f"await new Promise((ok, no) => require('net').connect({str(path)!r}, ok)"
            ".on('error', no));"
        ),
    }[language]
    with host_listener(path) as server:
        said = "".join(text_of(chunk) for chunk in contained.run(language, bare))
        assert nothing_arrived(server)
    assert "[blocked by the sandbox] it may connect only to Unix sockets in folders" in said, said


@pytest.mark.parametrize("language", ["python", "shell", "javascript"])
@pytest.mark.parametrize("where", ["var-tmp", "home"])
def test_a_host_socket_bound_after_the_start_is_refused(
    where: str, language: str, place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = socket_path(place, where, f"{language}-on")
    with Computer(sandbox="workspace", workdir=place.work) as contained:
        assert output_of(contained, language, START[language]) == "up\n"
        with host_listener(path) as server:
            said = output_of(contained, language, connect_code(language, path))
            assert said in ("refused 13 Permission denied\n", "refused EACCES\n"), said
            assert nothing_arrived(server)


@pytest.mark.parametrize("language", ["python", "shell", "javascript"])
@pytest.mark.parametrize("where", ["var-tmp", "home"])
def test_with_the_guard_off_the_same_attempt_reaches_the_host(
    where: str, language: str, place: Place, guard_off: None
) -> None:
    path = socket_path(place, where, f"{language}-off")
    with Computer(sandbox="workspace", workdir=place.work) as unguarded:
        assert output_of(unguarded, language, START[language]) == "up\n"
        with host_listener(path) as server:
            said = output_of(unguarded, language, connect_code(language, path))
            assert said == "connected\n", said
            assert received(server) == b"intruder"


OWN_SOCKETS = """
import os, socket
def pair(family, kind, address):
    server = socket.socket(family, kind)
    server.bind(address)
    server.listen()
    client = socket.socket(family, kind)
    client.connect(address)
    peer, _ = server.accept()
    client.sendall(b'x')
    got = peer.recv(1)
    for s in (client, peer, server):
        s.close()
    return got == b'x'
print('workdir', pair(socket.AF_UNIX, socket.SOCK_STREAM, 'own.sock'))
os.unlink('own.sock')
os.makedirs('/tmp/own', exist_ok=True)
print('tmp', pair(socket.AF_UNIX, socket.SOCK_SEQPACKET, '/tmp/own/own.sock'))
here = os.getcwd()
os.chdir('/tmp/own')  # a relative path from a folder only the sandbox has
print('relative', pair(socket.AF_UNIX, socket.SOCK_STREAM, 'relative.sock'))
os.chdir(here)
print('abstract', pair(socket.AF_UNIX, socket.SOCK_STREAM, '\\0lmc-own-{tag}'))
server = socket.create_server(('127.0.0.1', 0))
client = socket.create_connection(server.getsockname(), timeout=10)
client.sendall(b'z')
print('loopback', server.accept()[0].recv(1) == b'z')
a, b = socket.socketpair()
a.sendall(b'y')
print('socketpair', b.recv(1) == b'y')
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect('missing.sock')
except OSError as e:
    print('missing', e.errno)
import multiprocessing
manager = multiprocessing.Manager()  # a server process on a Unix socket in /tmp
shared = manager.dict(x=1)
print('manager', dict(shared))
manager.shutdown()
"""


def test_the_codes_own_sockets_still_work(place: Place, contained: Computer) -> None:
    """Sockets the code binds in folders it may write (the working directory, its /tmp),
    abstract ones, loopback TCP, socket pairs and a multiprocessing manager connect as before;
    a missing path is ENOENT."""
    said = output_of(contained, "python", OWN_SOCKETS.format(tag=secrets.token_hex(4)))
    assert said.split("\n") == [
        "workdir True",
        "tmp True",
        "relative True",
        "abstract True",
        "loopback True",
        "socketpair True",
        "missing 2",
        "manager {'x': 1}",
        "",
    ], said


DATAGRAM = """
import socket
for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM),
             lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]):
    try:
        s = make()
        s.sendto(b'intruder', {path!r})
        print('sent')
    except OSError as e:
        print('refused', e.errno)
"""


def test_a_host_datagram_socket_bound_later_gets_nothing(place: Place) -> None:
    """``sendto`` with an address needs no connect: Unix datagram sockets are refused (both
    ``socket`` and ``socketpair``), so nothing reaches a host datagram socket bound later;
    with the guard off both sends arrive."""
    path = place.root / "later-datagram" / "log.sock"
    path.parent.mkdir(exist_ok=True)
    for guarded in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not guarded:
                unguard(patch)
            with Computer(sandbox="workspace", workdir=place.work) as computer:
                assert output_of(computer, "python", "print('up')") == "up\n"
                receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                receiver.bind(str(path))
                path.chmod(0o777)
                try:
                    said = output_of(computer, "python", DATAGRAM.format(path=str(path)))
                    receiver.setblocking(False)
                    got = []
                    while True:
                        try:
                            got.append(receiver.recv(100))
                        except BlockingIOError:
                            break
                finally:
                    receiver.close()
                    path.unlink()
        if guarded:
            assert said == "refused 13\nrefused 13\n" and got == [], (said, got)
        else:
            assert said == "sent\nsent\n" and got == [b"intruder", b"intruder"], (said, got)


AROUND = """
import os, socket
os.symlink({path!r}, 'link.sock')
for address in ('link.sock', '/proc/self/fd/%d' % os.open({path!r}, os.O_PATH)):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address); s.sendall(b'intruder'); print('connected')
    except OSError as e:
        print('refused', e.errno)
os.unlink('link.sock')
"""


@pytest.mark.parametrize("guarded", [True, False])
def test_a_link_or_a_proc_descriptor_does_not_lead_around(guarded: bool, place: Place) -> None:
    """A link in the working directory to the host socket, and ``/proc/self/fd/N`` of an
    O_PATH descriptor of it: the socket reached is the one checked (the link followed inside
    the sandbox's root, to a read-only mount: EACCES; ``/proc/self`` is not the code's
    own when lmc resolves it, and no magic link is followed: ENOENT)."""
    path = place.root / f"later-around-{guarded}" / "listen.sock"
    with pytest.MonkeyPatch.context() as patch:
        if not guarded:
            unguard(patch)
        with Computer(sandbox="workspace", workdir=place.work) as computer:
            assert output_of(computer, "python", "print('up')") == "up\n"
            with host_listener(path) as server:
                said = output_of(computer, "python", AROUND.format(path=str(path)))
                if guarded:
                    assert said == "refused 13\nrefused 2\n", said
                    assert nothing_arrived(server)
                else:
                    assert said == "connected\nconnected\n", said
                    assert received(server) == b"intruder"


TAKE_OVER = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
seccomp = {"x86_64": 317, "aarch64": 277}[os.uname().machine]
allow = (ctypes.c_uint64 * 1)(0x7FFF000000000006)  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
class Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))
program = Program(1, ctypes.cast(allow, ctypes.c_void_p))
fd = libc.syscall(seccomp, 1, 8, ctypes.byref(program))  # NEW_LISTENER
print('listener', 'refused' if fd < 0 else 'got', errno.errorcode.get(ctypes.get_errno()))
params = (ctypes.c_char * 120)()
ring = libc.syscall(425, 4, params)  # io_uring_setup
print('io_uring', 'refused' if ring < 0 else 'got', errno.errorcode.get(ctypes.get_errno()))
"""


def test_the_code_cannot_answer_its_own_connects(place: Place) -> None:
    """A seccomp listener of the code's own (its notifications would come before lmc's, and
    it could let its connect through) is refused, and so is io_uring (whose connect is no
    system call). With the guard off both are there: the attempt is real."""
    for guarded in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not guarded:
                unguard(patch)
            with Computer(sandbox="workspace", workdir=place.work) as computer:
                said = output_of(computer, "python", TAKE_OVER)
        if guarded:
            assert said == "listener refused EPERM\nio_uring refused ENOSYS\n", said
        else:
            assert said.startswith("listener got") and "io_uring got" in said, said


ABSTRACT = """
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({name!r}); print('connected')
except OSError as e:
    print('refused', e.errno)
"""


def test_a_host_abstract_socket_is_apart(place: Place, contained: Computer) -> None:
    """Abstract Unix sockets belong to a network namespace: one the host binds after the
    start is unknown inside (ECONNREFUSED); without the sandbox it is reached."""
    name = f"\0lmc-host-{secrets.token_hex(4)}"
    assert output_of(contained, "python", "print('up')") == "up\n"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen()
    try:
        assert output_of(contained, "python", ABSTRACT.format(name=name)) == "refused 111\n"
        assert nothing_arrived(server)
        with Computer(sandbox="off", workdir=place.work) as uncontained:
            said = output_of(uncontained, "python", ABSTRACT.format(name=name))
        assert said == "connected\n", said
    finally:
        server.close()


def test_doctor_says_how_connects_are_guarded(place: Place) -> None:
    off, _ = resolve_policy("workspace", workdir=place.work)
    on, _ = resolve_policy("workspace", workdir=place.work, network=True)
    guarded = {name: (active, detail) for name, active, detail in protections(off)}
    assert guarded["connect"][0], guarded["connect"]
    assert "read-only mount" in guarded["connect"][1]
    unguarded = {name: (active, detail) for name, active, detail in protections(on)}
    assert unguarded["connect"] == (
        False,
        "not guarded: the network is on (sockets bound later reachable)",
    )


def test_the_guard_ends_with_its_kernels(place: Place) -> None:
    """Each kernel's supervisor thread ends once no process is left under its filter."""
    before = set(threading.enumerate())

    def guards() -> list[threading.Thread]:
        return [
            t for t in threading.enumerate() if t.name == "lmc-connect-guard" and t not in before
        ]

    with Computer(sandbox="workspace", workdir=place.work) as computer:
        assert output_of(computer, "python", "print('up')") == "up\n"
        assert output_of(computer, "shell", "echo up") == "up\n"
        assert len(guards()) == 2
    wait_until(lambda: not guards(), what="the guard threads to end")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_kernel_starts_under_the_guard(language: str, place: Place) -> None:
    """Each language's kernel starts through the guard's step: its processes carry two seccomp
    filters (the sandbox's and the guard's), one with the guard off."""
    status = Path("/proc/self/status")
    for guarded, filters in ((True, 2), (False, 1)):
        with pytest.MonkeyPatch.context() as patch:
            if not guarded:
                unguard(patch)
            with Computer(sandbox="workspace", workdir=place.work) as computer:
                said = output_of(computer, language, read_code(language, status))
        assert f"Seccomp_filters:\t{filters}" in said, said


SWAP = """
import ctypes, socket, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
unix = struct.pack('=H', socket.AF_UNIX) + {path!r}.encode() + b'\\0'
inet = struct.pack('=H', socket.AF_INET) + bytes(len(unix) - 2)
address = ctypes.create_string_buffer(unix, len(unix))
done = threading.Event()
def swap():
    while not done.is_set():
        ctypes.memmove(address, inet, len(inet))
        ctypes.memmove(address, unix, len(unix))
swapper = threading.Thread(target=swap)
swapper.start()
connected = 0
for _ in range(300):
    s = socket.socket(socket.AF_UNIX)
    connected += libc.connect(s.fileno(), address, len(unix)) == 0
    s.close()
done.set()
swapper.join()
print('connected', connected)
"""


def test_an_address_changed_while_lmc_looks_gets_nowhere(place: Place, contained: Computer) -> None:
    """The code rewrites the address between a harmless one and the host socket's while it
    connects, to win the moment between lmc's look and the call. lmc never lets the code's own
    call go on: it connects with the bytes it read, so nothing arrives, however the race falls
    (with the guard off a plain connect arrives: test_with_the_guard_off_...)."""
    path = place.root / "later-swap" / "listen.sock"
    assert output_of(contained, "python", "print('up')") == "up\n"
    with host_listener(path) as server:
        said = output_of(contained, "python", SWAP.format(path=str(path)))
        assert said == "connected 0\n", said
        assert nothing_arrived(server)


def test_where_the_guard_cannot_run_the_start_masks_remain(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Linux without user notifications (or pidfd_getfd): kernels start as before, every
    socket bound at the start is masked, and doctor says what is not guarded."""
    monkeypatch.setattr(connect_guard, "_built", {"problem": "no user notifications here"})
    policy, _ = resolve_policy("workspace", workdir=place.work)
    lines = {name: (active, detail) for name, active, detail in protections(policy)}
    assert lines["connect"][0] is False
    assert lines["connect"][1].startswith("not guarded: no user notifications here")
    assert "(/proc/net/unix) covered" in lines["sockets"][1]
    path = place.root / "before-fallback" / "listen.sock"
    with host_listener(path) as server, Computer(sandbox="workspace", workdir=place.work) as c:
        said = output_of(c, "python", connect_code("python", path))
        assert said.startswith("refused 111 Connection refused\n"), said  # /dev/null over it
        status = output_of(c, "python", read_code("python", Path("/proc/self/status")))
        assert "Seccomp_filters:\t1" in status, status
        assert nothing_arrived(server)
