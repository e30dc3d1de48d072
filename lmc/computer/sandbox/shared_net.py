"""One network namespace for all the kernels of a session, when the network is off.

Each sandboxed kernel used to get a network namespace of its own, so a server started from
the python kernel (or a shell job) was unreachable from the shell kernel's ``curl``: the model
saw ``000`` and no reason. Instead, one small holder process per :class:`~lmc.computer.Computer`
owns a user and network namespace (loopback only, brought up by bubblewrap), and every kernel's
bwrap is started inside it with util-linux's ``nsenter``: the kernels share one loopback that
the host and other sessions cannot see.

The holder is ``bwrap --unshare-user --uid 0 --unshare-net ... sleep``: as (namespace) root of
its own user namespace, ``nsenter --user --net --preserve-credentials`` can join both without
privileges on the host, and the kernel's bwrap then makes the sandbox's own user namespace
inside it as before (the code still runs unprivileged, with no capabilities). The holder is
started from lmc's launcher thread with ``--die-with-parent``, so it dies with lmc. Where
``nsenter`` is missing or the holder cannot start, kernels keep a namespace each, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Final

from lmc.computer.sandbox.detect import find_tool
from lmc.computer.sandbox.launcher import launch
from lmc.paths import host_which

__all__ = ["SharedNetwork"]

#: Seconds the holder gets to show its sandboxed child.
_START_TIMEOUT: Final = 10.0


class SharedNetwork:
    """The holder of one session's network namespace, started on first use."""

    def __init__(self, bwrap: str) -> None:
        self._bwrap = bwrap
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._inner: int | None = None  # the holder's child: the process in the namespace
        #: A holder started by :meth:`begin`, not yet waited for: its process and info pipe.
        self._pending: tuple[subprocess.Popen[bytes], int] | None = None
        self._closed = False

    def begin(self) -> None:
        """Start the holder if none lives, without waiting for it: a kernel's start-up work
        (its seccomp programs, its mounts) goes on while bwrap makes the namespace, and
        :meth:`join_prefix` waits for it then."""
        if host_which("nsenter") is None:
            return
        with self._lock:
            if not self._closed and self._pending is None and not self._alive():
                self._spawn()

    def join_prefix(self) -> list[str]:
        """The command prefix that starts a program in the shared namespace; empty when
        there is none to join (each kernel then gets its own, as before)."""
        nsenter = host_which("nsenter")  # never a ./nsenter the code planted
        if nsenter is None:
            return []
        with self._lock:
            if self._closed:
                return []
            if self._pending is None and not self._alive():
                self._spawn()
            self._settle()
            inner = self._inner
        if inner is None:
            return []
        return [nsenter, "-t", str(inner), "--user", "--net", "--preserve-credentials", "--"]

    @classmethod
    def find(cls) -> SharedNetwork | None:
        """One for this machine's bubblewrap; None where there is none (or no Linux)."""
        tool = find_tool()
        if tool.kind != "bubblewrap" or tool.path is None or not tool.usable:
            return None
        return cls(tool.path)

    @property
    def holder_pid(self) -> int | None:
        """The pid of the process that holds the namespace (tests look at it from outside)."""
        return self._inner

    def close(self) -> None:
        """End the holder (the kernels in the namespace keep it until they end)."""
        with self._lock:
            self._closed = True
            inner = self._inner
            process, self._process, self._inner = self._process, None, None
            if self._pending is not None:
                process, info = self._pending
                self._pending = None
                os.close(info)
        if inner is not None:  # die-with-parent would end it too, a moment later
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(inner, signal.SIGKILL)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
            process.wait()

    def _alive(self) -> bool:
        inner = self._inner
        return (
            self._process is not None
            and self._process.poll() is None
            and inner is not None
            and Path(f"/proc/{inner}").exists()
        )

    def _spawn(self) -> None:
        """Start a holder; :meth:`_settle` waits for its namespace."""
        if self._process is not None:  # a holder that died: a new namespace from now on
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            self._process.wait()
        self._process, self._inner = None, None
        info_read, info_write = os.pipe()  # bwrap writes its child's pid there, once it is made
        argv = [
            self._bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--unshare-user", "--uid", "0", "--gid", "0",
            "--unshare-net",
            "--die-with-parent",
            "--info-fd", str(info_write),
            "--", "sleep", "infinity",
        ]  # fmt: skip

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(info_write,),
                start_new_session=True,
            )

        try:
            process = launch(start)
        except OSError:
            os.close(info_read)
            return
        finally:
            os.close(info_write)
        self._pending = (process, info_read)

    def _settle(self) -> None:
        """Wait for the holder :meth:`_spawn` started to make its namespace (none: no holder)."""
        if self._pending is None:
            return
        (process, info_read), self._pending = self._pending, None
        try:
            inner = _reported_child(info_read, process) or _child_of(process)
        except OSError:
            inner = None
        finally:
            os.close(info_read)
        if inner is None:
            process.kill()
            process.wait()
            return
        self._process, self._inner = process, inner


def _reported_child(info: int, process: subprocess.Popen[bytes]) -> int | None:
    """The child pid bwrap writes to ``--info-fd`` once the namespaces are made (a few
    milliseconds, where watching /proc for the child took a poll of 10 ms); None if it wrote
    none (it failed, or an old bwrap without the option)."""
    deadline = time.monotonic() + _START_TIMEOUT
    data = b""
    while b"}" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([info], [], [], left)[0]:
            return None
        chunk = os.read(info, 4096)
        if not chunk:
            break  # bwrap closed it (or ended) before a whole report
        data += chunk
    try:
        pid = json.loads(data).get("child-pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and pid > 0 and process.poll() is None else None


def _child_of(process: subprocess.Popen[bytes]) -> int | None:
    """bwrap's sandboxed child (the process inside the namespaces), once it is there."""
    deadline = time.monotonic() + _START_TIMEOUT
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            pids = children.read_text().split()
            if pids:
                inner = int(pids[0])
                own = Path(f"/proc/{process.pid}/ns/net").readlink()
                if Path(f"/proc/{inner}/ns/net").readlink() != own:  # it has unshared already
                    return inner
        time.sleep(0.01)
    return None
