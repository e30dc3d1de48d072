"""Launching a kernel process on this machine, and ending what it leaves behind.

Kernels are launched with lmc's own argv (:mod:`lmc.computer.kernelspecs`), inside the
sandbox a :class:`~lmc.computer.sandbox.SandboxPolicy` describes (when it is on), with stdin
from /dev/null and their own stdout/stderr in a log file (shown when a kernel fails to start).
Each kernel gets a private (0700) directory holding its owner-only connection file and, on
POSIX, its ZeroMQ ipc sockets (Unix sockets: no TCP port anyone on the machine can reach, and
they work inside a sandbox without a network); that one directory is shared into the sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Final

from lmc.computer.kernelspecs import KernelSpec, kernels_dir
from lmc.computer.sandbox import SandboxLaunch, SandboxPolicy, launch, prepare_launch
from lmc.errors import ComputerError
from lmc.paths import host_which

__all__ = [
    "KERNEL_ENV",
    "child_groups",
    "editor_env",
    "kill_group",
    "launch_plan",
    "start_process",
    "write_connection",
]

#: Environment every kernel gets, local or on a gateway: nothing waits for a person who is
#: not there. No pager waits for a keypress, git asks for no password (it fails with a message
#: instead), apt/debconf and pip ask nothing, ssh never prompts (BatchMode). The editor
#: fails at once (a local kernel's says why: :data:`EDITOR_ENV`); the person's own ``EDITOR``
#: is never passed in.
KERNEL_ENV: Final = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "EDITOR": "false",
    "VISUAL": "false",
    "GIT_EDITOR": "false",
    "GIT_SEQUENCE_EDITOR": "false",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
    "GCM_INTERACTIVE": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
}


def editor_env() -> dict[str, str]:
    """A local kernel's editor: ``kernels/lmc_wrapper/no_editor`` tells the code that an
    editor was wanted and how to do without, and fails."""
    script = str(kernels_dir() / "lmc_wrapper" / "no_editor")
    names = ("EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR")
    return dict.fromkeys(names, script)


#: The channels of a connection file, numbered as jupyter_client numbers ipc sockets in a
#: fresh folder (``PATH-1`` ... ``PATH-5``).
_CHANNEL_PORTS: Final = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def write_connection(runtime_dir: Path, kernel_name: str) -> tuple[Path, Path]:
    """A private folder with a fresh connection file in it: (connection file, log path).

    Written here rather than by jupyter_client (whose package import is ~70 ms of lmc's start
    for a kernel the model may never use): the same JSON its ``write_connection_file`` writes
    for ipc sockets, readable only by the owner."""
    # Short names: a Unix socket path must fit in about 100 bytes.
    stem = f"k-{kernel_name[:12]}-{os.urandom(4).hex()}"
    private = runtime_dir / stem
    private.mkdir(mode=0o700)
    connection_file = private / "kernel.json"
    info: dict[str, object] = {name: n for n, name in enumerate(_CHANNEL_PORTS, start=1)}
    info.update(
        ip=str(private / "s"),
        key=os.urandom(32).hex(),
        transport="ipc",
        signature_scheme="hmac-sha256",
        kernel_name=kernel_name,
    )
    descriptor = os.open(connection_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(info, file, indent=2)
    return connection_file, runtime_dir / f"{stem}.log"


def launch_plan(
    spec: KernelSpec,
    connection_file: Path,
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    sandbox: SandboxPolicy | None,
    private_root: Path,
    shared: tuple[Path, ...] = (),
    join_network: Callable[[], Sequence[str]] | None = None,
) -> tuple[SandboxLaunch, Path | None]:
    """How to start ``spec``'s kernel: its launch (argv, environment, descriptors) and folder."""
    kernel_env = {**KERNEL_ENV, **editor_env(), **spec.env, **env}
    command = spec.command(str(connection_file))
    if sandbox is None:
        return SandboxLaunch(_dying_with_lmc(command), {**os.environ, **kernel_env}), cwd
    cwd = cwd or sandbox.workdir
    # The spec's folder and its siblings (the wrapper kernels share lmc_wrapper/), the
    # interpreter, and the workdir (read-only mode binds it no other way): seen even when they
    # live under /tmp, which is private.
    needed = [
        sandbox.workdir,
        kernels_dir(),
        spec.resource_dir,
        Path(sys.prefix),
        Path(sys.base_prefix),
        # Where the kernel's imports come from when lmc runs from a PYTHONPATH.
        *(Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p),
    ]
    plan = prepare_launch(
        sandbox,
        command,
        os.environ,
        kernel_env=kernel_env,
        shared=[connection_file.parent, *shared],
        readable=needed,
        cwd=cwd,
        private_root=private_root,
        join_network=join_network,
        in_place=spec.guard_in_place,
    )
    return plan, cwd


def start_process(
    plan: SandboxLaunch, log: IO[bytes], cwd: Path | None, kernel_name: str
) -> subprocess.Popen[bytes]:
    """Start the kernel process as ``plan`` says, its output going to ``log``: in a session
    of its own, told lmc's pid (``JPY_PARENT_PID``: ipykernel exits when that parent is
    gone), as jupyter_client's ``launch_kernel`` starts one on POSIX."""
    env = {**plan.env, "JPY_PARENT_PID": str(os.getpid())}

    def start() -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                plan.argv,
                stdin=subprocess.DEVNULL,
                stdout=log.fileno(),
                stderr=log.fileno(),
                env=env,
                cwd=None if cwd is None else str(cwd),
                pass_fds=plan.pass_fds,
                start_new_session=True,
            )
        finally:
            plan.started()

    try:
        # From lmc's long-lived launcher thread: bwrap's die-with-parent is tied to the
        # thread that starts it, and a kernel's start-up thread ends in a moment.
        return launch(start)
    except OSError as exc:
        raise ComputerError(
            f"could not run the {kernel_name} kernel ({plan.argv[0]}): {exc}"
        ) from exc


def kill_group(group: int) -> None:
    """SIGKILL to a process group that may be gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def child_groups(pid: int) -> set[int] | None:
    """The process groups led by ``pid``'s children other than its own (a wrapper kernel's
    bash or node session, with its background jobs); None without /proc. What the code
    moved to a session of its own (setsid) is not reached, as by the kernel's do_shutdown:
    only the sandbox contains that."""
    proc = Path("/proc")
    if not (proc / str(pid)).is_dir():
        return None
    try:
        own = os.getpgid(pid)
    except ProcessLookupError:
        return set()
    groups: set[int] = set()
    for children in proc.glob(f"{pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            for child in children.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    group = os.getpgid(int(child))
                    if group != own:
                        groups.add(group)
    return groups


def _dying_with_lmc(argv: list[str]) -> list[str]:
    """An unsandboxed kernel's ``argv`` tied to lmc with ``PR_SET_PDEATHSIG`` (Linux).

    Killed outright (SIGKILL, the out-of-memory killer), lmc cannot end its kernels, and
    IRkernel, unlike ipykernel, never notices that its parent is gone. util-linux's setpriv
    sets the signal and execs the kernel in place; the signal is tied to the thread that
    starts the process, lmc's long-lived launcher thread. (In the sandbox, bubblewrap's
    die-with-parent does this.)
    """
    if not sys.platform.startswith("linux"):
        return argv
    setpriv = host_which("setpriv")
    return argv if setpriv is None else [setpriv, "--pdeathsig", "KILL", "--", *argv]
