"""The code is never root and has no capabilities; the seccomp filter denies mount, keyctl,
ptrace, bpf, TIOCSTI and new namespaces; /proc/sys is read-only and /proc/keys masked. Each
attempt is made for real from inside, and succeeds (as root) with the sandbox off."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sandbox_testing import Place, output_of

from lmc.computer import Computer

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="the 'off' side needs root")

_SYSCALL = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def said(result):
    return 'ok' if result >= 0 else 'denied:' + errno.errorcode[ctypes.get_errno()]
"""
ATTEMPTS = {
    # mount a tmpfs on a folder of the test
    "mount": "print(said(libc.mount(b'none', {target!r}.encode(), b'tmpfs', 0, None)))",
    # read the session keyring's id (KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)
    "keyctl": "print(said(libc.syscall(250, 0, -3, 0)))",
    # PTRACE_TRACEME
    "ptrace": "print(said(libc.ptrace(0, 0, None, None)))",
    # BPF_MAP_CREATE of a small array map
    "bpf": (
        "attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)\n"
        "print(said(libc.syscall(321, 0, ctypes.byref(attr), ctypes.sizeof(attr))))"
    ),
    # a new network namespace (the host's cannot be entered, nor a new one made)
    "unshare": "print(said(libc.unshare(0x40000000)))",
    # push a keystroke into a terminal (a pty of its own here)
    "tiocsti": (
        "import fcntl, termios\nmaster, slave = os.openpty()\n"
        "try:\n    fcntl.ioctl(slave, termios.TIOCSTI, b'x'); print('ok')\n"
        "except OSError as e:\n    print('denied:' + errno.errorcode[e.errno])"
    ),
}


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_a_dangerous_system_call_is_denied(
    attempt: str, place: Place, contained: Computer, uncontained: Computer
) -> None:
    target = place.work / f"mnt-{attempt}"
    target.mkdir(exist_ok=True)
    code = _SYSCALL + ATTEMPTS[attempt].format(target=str(target))
    try:
        assert output_of(contained, "python", code).strip().startswith("denied:EPERM")
        assert output_of(uncontained, "python", code).strip() == "ok"
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def test_the_code_is_an_unprivileged_user_without_capabilities(
    contained: Computer, uncontained: Computer
) -> None:
    code = "id -u; grep CapEff /proc/self/status"
    inside = output_of(contained, "shell", code).split()
    assert inside[0] != "0" and inside[-1] == "0000000000000000", inside
    outside = output_of(uncontained, "shell", code).split()
    assert outside[0] == "0" and outside[-1] != "0000000000000000"


def test_sysctls_and_core_pattern_cannot_be_changed(
    contained: Computer, uncontained: Computer
) -> None:
    current = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    code = f"printf '%s\\n' '{current}' > /proc/sys/kernel/core_pattern && echo wrote"
    assert "wrote" not in output_of(contained, "shell", code)
    assert "wrote" in output_of(uncontained, "shell", code)  # the same value: no change
    assert Path("/proc/sys/kernel/core_pattern").read_text().strip() == current


def test_the_kernel_keyring_is_not_listed(contained: Computer, uncontained: Computer) -> None:
    code = "echo lines $(cat /proc/keys /proc/key-users 2> /dev/null | grep -c .)"
    assert "lines 0" in output_of(contained, "shell", code)
    assert "lines 0" not in output_of(uncontained, "shell", code)


def test_new_namespaces_fail_from_the_shell(contained: Computer, uncontained: Computer) -> None:
    code = "unshare -n true && echo entered"
    assert "entered" not in output_of(contained, "shell", code)
    assert "entered" in output_of(uncontained, "shell", code)


NOBODY_PROGRAM = """
import os, sys
from lmc.computer import Computer
work = sys.argv[1]
code = (
    "import os, errno, ctypes\\n"
    "libc = ctypes.CDLL(None, use_errno=True)\\n"
    "print('uid', os.getuid())\\n"
    "print('cap', open('/proc/self/status').read().split('CapEff:')[1].split()[0])\\n"
    "print('key', os.environ.get('OPENAI_API_KEY'))\\n"
    "print('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno())\\n"
    "try:\\n    open(%r, 'w').write('x'); print('outside wrote')\\n"
    "except OSError as e:\\n    print('outside', e.errno)\\n"
) % (os.path.join(os.path.dirname(work), 'outside-nobody.txt'),)
for mode in ('workspace', 'off'):
    with Computer(sandbox=mode, workdir=work) as computer:
        out = ''.join(c['content'] for c in computer.run('python', code)
                      if c.get('format') == 'output')
        print(mode, out.replace('\\n', ' | '), flush=True)
"""


def _site() -> list[str]:
    return [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)]


def _system_python() -> str:
    """An interpreter of this Python version that any user may run."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = shutil.which(version, path="/usr/bin:/usr/local/bin")
    assert found is not None, f"no {version} outside root's home to run lmc as nobody"
    return found


@pytest.fixture
def nobody_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="lmc-nobody-", dir="/var/tmp"))
    (root / "work").mkdir()
    for path in (root, root / "work"):
        os.chown(path, 65534, 65534)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_the_same_holds_for_a_normal_user(nobody_root: Path) -> None:
    """lmc itself run as nobody (setpriv): its sandbox is the same, and sandbox off shows
    what the code could do as that user."""
    root = nobody_root
    work = root / "work"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        # The venv's interpreter may live in root's home (pyenv), which nobody cannot
        # enter: the system's Python of the same version runs lmc from the venv's packages.
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]), *_site()]),
        "OPENAI_API_KEY": "sk-nobody-secret",
        "LMC_DATA_DIR": str(root / "data"),
    }
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
         _system_python(), "-c", NOBODY_PROGRAM, str(work)],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    inside, outside = lines["workspace"], lines["off"]
    assert "uid 65534" in inside and "cap 0000000000000000" in inside, inside
    assert "key None" in inside and "mount -1 1" in inside, inside
    assert "outside wrote" not in inside
    assert "key sk-nobody-secret" in outside and "outside wrote" in outside, outside


SOCKET_PROGRAM = """
import sys
from lmc.computer import Computer
from lmc.computer.sandbox import connect_guard, masks
work, path = sys.argv[1], sys.argv[2]
code = (
    "import socket\\ns = socket.socket(socket.AF_UNIX)\\ns.settimeout(5)\\n"
    f"s.connect({path!r})\\nprint(s.recv(100).decode())"
)
def said(computer):
    return "".join(c.get("content", "") for c in computer.run("python", code)
                   if c.get("format") == "output")
with Computer(sandbox="workspace", workdir=work) as contained:
    print("masked", "agent-hello" in said(contained))
masks.bound_sockets = lambda *a, **k: []
connect_guard.guard_connects = lambda: False  # the second guard, for sockets bound later
with Computer(sandbox="workspace", workdir=work) as unmasked:
    print("unmasked", "agent-hello" in said(unmasked))
"""


def test_a_host_socket_is_masked_for_a_normal_user_too(nobody_root: Path) -> None:
    """The same attack as test_host_reach's, with lmc run as nobody: a socket anyone may
    connect to (0777), deep in /var/tmp, is refused inside and reached with the mask (and the
    connect guard) off."""
    from support.sandbox_testing import greeting

    root = nobody_root
    path = root / "service" / "listen.sock"
    path.parent.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]), *_site()]),
        "LMC_DATA_DIR": str(root / "data"),
    }
    with greeting(server, b"agent-hello\n"):
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
             _system_python(), "-c", SOCKET_PROGRAM, str(root / "work"), str(path)],
            env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["masked False", "unmasked True"], done.stdout


LATER_SOCKET_PROGRAM = """
import socket, sys
from pathlib import Path
from lmc.computer import Computer
from lmc.computer.sandbox import connect_guard
work, folder = sys.argv[1], Path(sys.argv[2])
def said(computer, code):
    return "".join(c.get("content", "") for c in computer.run("python", code)
                   if c.get("format") == "output")
def attempt(name):
    path = folder / name / "listen.sock"
    code = (
        "import socket\\ns = socket.socket(socket.AF_UNIX)\\ns.settimeout(10)\\ntry:\\n"
        f"    s.connect({str(path)!r}); s.sendall(b'intruder'); print('connected')\\n"
        "except OSError as e:\\n    print('refused', e.errno)"
    )
    with Computer(sandbox="workspace", workdir=work) as computer:
        said(computer, "print('up')")
        path.parent.mkdir()
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        inside = said(computer, code).strip()
        server.setblocking(False)
        try:
            arrived = server.accept()[0].recv(100).decode()
        except BlockingIOError:
            arrived = "nothing"
    print(name, inside, arrived)
NON_DUMPABLE = (
    "import ctypes, socket\\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE\\n"
    "s = socket.socket(socket.AF_UNIX)\\ns.bind('/tmp/own.sock')\\ns.listen()\\n"
    "c = socket.socket(socket.AF_UNIX)\\nc.connect('/tmp/own.sock')\\nprint('own fine')"
)
with Computer(sandbox="workspace", workdir=work) as computer:
    print("non-dumpable", said(computer, NON_DUMPABLE).strip())
attempt("guarded")
connect_guard.guard_connects = lambda: False
attempt("unguarded")
"""


def test_a_host_socket_bound_later_is_refused_for_a_normal_user_too(nobody_root: Path) -> None:
    """lmc run as nobody: its own process binds a socket in a fresh folder of /var/tmp after
    the kernel started; the code's connect is refused (EACCES) and nothing arrives, and with
    the connect guard off the same code reaches it. A process that made itself non-dumpable
    (its /proc files then belong to root) still connects to its own socket: lmc reads the
    address with process_vm_readv, not /proc/PID/mem."""
    root = nobody_root
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[3]), *_site()]),
        "LMC_DATA_DIR": str(root / "data"),
    }
    folder = Path(tempfile.mkdtemp(prefix="lmc-nobody-sockets-", dir="/var/tmp"))
    os.chown(folder, 65534, 65534)  # outside its home, which is sealed
    try:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
             _system_python(), "-c", LATER_SOCKET_PROGRAM, str(root / "work"), str(folder)],
            env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "non-dumpable own fine",
        "guarded refused 13 nothing",
        "unguarded connected intruder",
    ], done.stdout
