"""What the sandbox tests share: each language's code for one attempt, a loopback server,
and a look at the real process table from outside the sandbox."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lmc.computer import Computer
from lmc.messages import text_of

LANGUAGES = ("python", "shell", "javascript", "r")
FAKE_KEY = "-----BEGIN FAKE KEY----- lmc-test-secret"
NOTES = "lmc-test-notes"


@dataclass(frozen=True)
class Place:
    """A working directory, a directory outside it and a test HOME, on a real disk."""

    root: Path
    work: Path
    outside: Path
    home: Path


def write_code(language: str, path: Path) -> str:
    """Code that writes "x" to ``path``."""
    return {
        "python": f"open({str(path)!r}, 'w').write('x')",
        "shell": f"echo x > '{path}'",
        "javascript": f"require('fs').writeFileSync({str(path)!r}, 'x')",
        "r": f"writeLines('x', '{path}')",
    }[language]


def read_code(language: str, path: Path) -> str:
    """Code that prints the contents of ``path``."""
    return {
        "python": f"print(open({str(path)!r}).read())",
        "shell": f"cat '{path}'",
        "javascript": f"console.log(require('fs').readFileSync({str(path)!r}, 'utf8'))",
        "r": f"cat(readLines('{path}'), sep='\\n')",
    }[language]


def connect_code(language: str, port: int) -> str:
    """Code that connects to 127.0.0.1:``port`` and prints what the server says."""
    return {
        "python": (
            "import socket\n"
            f"with socket.create_connection(('127.0.0.1', {port}), timeout=10) as s:\n"
            "    print(s.recv(100).decode())"
        ),
        "shell": f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n 1 <&3; exec 3>&-",
        "javascript": (
            "const said = await new Promise((done) => {\n"
            f"  const s = require('net').connect({port}, '127.0.0.1');\n"
            "  s.on('data', (d) => { done(d.toString()); s.destroy(); });\n"
            "  s.on('error', (e) => done('error ' + e.code));\n"
            "});\n"
            "console.log(said.trim());"
        ),
        "r": (
            f"con <- socketConnection('127.0.0.1', {port}, open = 'r+b', blocking = TRUE, "
            "timeout = 10)\n"
            "cat(readLines(con, 1), sep = '\\n')\n"
            "close(con)"
        ),
    }[language]


def daemon_code(language: str, tag: str) -> str:
    """Code that starts ``sleep <tag>`` in a new session, in the background, and returns."""
    return {
        "python": (
            "import subprocess\n"
            f"subprocess.Popen(['sleep', '{tag}'], start_new_session=True, "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
        ),
        "shell": f"setsid sleep {tag} > /dev/null 2>&1 < /dev/null &",
        "javascript": (
            f"require('child_process').spawn('sleep', ['{tag}'], "
            "{ detached: true, stdio: 'ignore' }).unref();"
        ),
        "r": f"system('setsid sleep {tag} > /dev/null 2>&1 < /dev/null &')",
    }[language]


def output_of(computer: Computer, language: str, code: str) -> str:
    return "".join(
        text_of(chunk) for chunk in computer.run(language, code) if chunk.get("format") == "output"
    )


def sleepers(tag: str) -> list[int]:
    """PIDs (as seen from outside) of ``sleep <tag>`` processes that are alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", tag.encode()] and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def unique_tag() -> str:
    """A sleep duration no other process uses: how the test finds its own sleeper."""
    return f"{4000 + int.from_bytes(os.urandom(2), 'big')}.{os.getpid()}{time.monotonic_ns() % 997}"


def kill_all(tag: str) -> None:
    for pid in sleepers(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextmanager
def greeting(server: socket.socket, hello: bytes) -> Iterator[None]:
    """Answer each connection to the listening ``server`` with ``hello`` until the block ends;
    then close it."""
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(hello)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        server.close()


@contextmanager
def loopback_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets each connection with ``hello``; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    with greeting(server, b"hello\n"):
        yield server.getsockname()[1]


#: How a blocked block's explanation line starts.
PREFIX_LINE = "[blocked by the sandbox]"
