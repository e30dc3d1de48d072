"""The bubblewrap (``bwrap``) command line for a policy, on Linux.

The whole file system is mounted read-only, then :mod:`.masks` shapes it (the home folder
sealed, the writable places bound over it, repositories and virtual environments in them
read-only again, secrets, host sockets and other lmc sessions' folders covered). /tmp and
/dev/shm are private tmpfs of a bounded size, /run is an empty tmpfs (no system sockets),
/dev and /proc are fresh (``/proc/sys`` read-only, ``/proc/keys`` and ``/proc/key-users``
empty). The code runs as an unprivileged user of a new user namespace with no capabilities,
in its own session (no controlling terminal to inject keystrokes into) and PID namespace
(with ``--die-with-parent``: when the kernel, bwrap or lmc dies, everything the code started
dies with it), under the seccomp filter of :mod:`.seccomp`. Without the network the kernel
gets its own network namespace (loopback only, no abstract Unix sockets of the host), and
starts through :mod:`.guard_step`, which puts :mod:`.connect_guard`'s filter on first.

Signals: lmc interrupts a kernel with SIGINT to its process group, which holds bwrap too.
bwrap is started with SIGINT ignored (``env --ignore-signal=INT``) so that it survives, and
the kernel with SIGINT back to the default (``env --default-signal=INT``) so that Python's
KeyboardInterrupt and R's interrupt work as they do outside.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lmc.computer.sandbox.masks import mounts
from lmc.computer.sandbox.policy import SandboxPolicy

__all__ = ["UNPRIVILEGED_ID", "bwrap_command", "probe_command", "signal_prefix"]

_BASE = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
)  # fmt: skip
_PROC_MASKS = (
    "--ro-bind", "/proc/sys", "/proc/sys",
    "--ro-bind", "/dev/null", "/proc/keys",
    "--ro-bind", "/dev/null", "/proc/key-users",
)  # fmt: skip
#: The user lmc's code runs as when lmc itself is root (in the sandbox's user namespace).
UNPRIVILEGED_ID: Final = 1000


def signal_prefix() -> list[str]:
    """What runs bwrap with SIGINT ignored (it must outlive an interrupt to its group)."""
    return ["env", "--ignore-signal=INT"]


def _identity() -> list[str]:
    """A user namespace that maps the code to an unprivileged user with no capabilities."""
    uid, gid = os.getuid(), os.getgid()
    inner_uid = UNPRIVILEGED_ID if uid == 0 else uid
    inner_gid = UNPRIVILEGED_ID if gid == 0 else gid
    return [
        "--unshare-user",
        "--uid", str(inner_uid),
        "--gid", str(inner_gid),
        "--cap-drop", "ALL",
        "--new-session",
    ]  # fmt: skip


def _private_tmp(policy: SandboxPolicy) -> list[str]:
    limits = policy.limits
    return [
        "--size", str(limits.tmp_size), "--tmpfs", "/tmp",
        "--size", str(limits.shm_size), "--tmpfs", "/dev/shm",
    ]  # fmt: skip


def _run(policy: SandboxPolicy) -> list[str]:
    """An empty /run (no system sockets); with the network, the resolver's file back."""
    args = ["--tmpfs", "/run"]
    if policy.network:
        resolv = Path("/etc/resolv.conf")
        real = resolv.resolve()
        if resolv.is_symlink() and real.is_relative_to("/run") and real.exists():
            args += ["--ro-bind", str(real), str(real)]
    return args


def bwrap_command(
    bwrap: str,
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    shared: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    cwd: Path | None = None,
    private_root: Path | None = None,
    seccomp_fd: int | None = None,
    own_network: bool = True,
    launcher: Sequence[str] = (),
) -> list[str]:
    """The argv that runs ``argv`` inside bubblewrap under ``policy``.

    ``shared`` are directories bound writable at the same path (the kernel's sockets);
    ``readable`` are what the kernel needs to read (its interpreter, its spec);
    ``private_root`` is the folder of every lmc session's kernels (covered, ``shared``
    bound back); ``seccomp_fd`` a descriptor holding the filter (inherited by bwrap);
    ``own_network=False``: no network namespace of its own (it is started inside the
    session's shared one, :mod:`.shared_net`); ``launcher`` runs first inside, with
    SIGINT still ignored, and then ``argv`` (:mod:`.connect_guard`'s step, which guards
    every connect: no mask over each bound host socket is needed then).
    """
    command = [*signal_prefix(), bwrap, *_BASE, *_identity(), *_PROC_MASKS]
    command += _private_tmp(policy) + _run(policy)
    if not policy.network and own_network:
        command.append("--unshare-net")
    command += mounts(
        policy,
        shared=shared,
        readable=readable,
        private_root=private_root,
        mask_bound=not launcher,
    )
    start = (cwd or policy.workdir).resolve()
    # ipykernel would take the sandbox's init (pid 1) for an orphaning and exit; the PID
    # namespace and die-with-parent already end the kernel with its parent.
    command += ["--unsetenv", "JPY_PARENT_PID", "--setenv", "TMPDIR", "/tmp"]
    command += _matplotlib_env()
    if seccomp_fd is not None:
        command += ["--seccomp", str(seccomp_fd)]
    command += ["--chdir", str(start), "--", *launcher]
    command += ["env", "--default-signal=INT", *argv]
    return command


def _matplotlib_env() -> list[str]:
    """Matplotlib warns on every import when its config dir is read-only: give it one in
    the private /tmp, still reading the person's own matplotlibrc."""
    if "MPLCONFIGDIR" in os.environ:
        return []
    options = ["--setenv", "MPLCONFIGDIR", "/tmp/matplotlib"]
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    rc = Path(config) / "matplotlib" / "matplotlibrc"
    if "MATPLOTLIBRC" not in os.environ and rc.is_file():
        options += ["--setenv", "MATPLOTLIBRC", str(rc)]
    return options


def probe_command(bwrap: str) -> list[str]:
    """A run of ``true`` with every namespace and wrapper a kernel gets: does bwrap work?"""
    return [
        *signal_prefix(),
        bwrap,
        *_BASE,
        *_identity(),
        *_PROC_MASKS,
        "--unshare-net",
        "--",
        "env",
        "--default-signal=INT",
        "true",
    ]
