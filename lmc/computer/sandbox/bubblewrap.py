"""The bubblewrap (``bwrap``) command line for a policy, on Linux.

The whole file system is mounted read-only, then the writable places are bound over it
(the working directory in ``workspace`` mode, the kernel's private socket directory), then
each hidden secret is covered (an empty read-only tmpfs over a directory, /dev/null over a
file), last so that a secret inside the working directory stays hidden. /tmp is a private
tmpfs, /dev and /proc are fresh, and the kernel runs in its own PID namespace (with
``--die-with-parent``): when the kernel, bwrap or lmc dies, everything the code started dies
with it, ``setsid`` daemons included. Without the network the kernel gets its own network
namespace (loopback only, not the host's).

Signals: lmc interrupts a kernel with SIGINT to its process group, which holds bwrap too.
bwrap is started with SIGINT ignored (``env --ignore-signal=INT``) so that it survives, and
the kernel with SIGINT back to the default (``env --default-signal=INT``) so that Python's
KeyboardInterrupt and R's interrupt work as they do outside.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lmc.computer.sandbox.policy import SandboxPolicy

__all__ = ["bwrap_command", "probe_command", "signal_prefix"]

_BASE = (
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/tmp",
    "--unshare-pid",
    "--unshare-ipc",
    "--die-with-parent",
)  # fmt: skip


def signal_prefix() -> list[str]:
    """What runs bwrap with SIGINT ignored (it must outlive an interrupt to its group)."""
    return ["env", "--ignore-signal=INT"]


def bwrap_command(
    bwrap: str,
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    shared: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    cwd: Path | None = None,
) -> list[str]:
    """The argv that runs ``argv`` inside bubblewrap under ``policy``.

    ``shared`` are directories bound writable at the same path (the kernel's sockets);
    ``readable`` are what the kernel needs to read (its interpreter, its spec).
    """
    command = [*signal_prefix(), bwrap, *_BASE]
    if not policy.network:
        command.append("--unshare-net")
    # The private /tmp covers the host's: what the kernel must read there (its working
    # directory in read-only mode, an interpreter or kernel spec under /tmp) is bound back.
    for directory in (policy.workdir, *readable):
        needed = Path(directory).resolve()
        if needed.is_relative_to("/tmp") and needed.exists():
            command += ["--ro-bind", str(needed), str(needed)]
    for directory in (*policy.writable(), *shared):
        real = str(Path(directory).resolve())
        command += ["--bind", real, real]
    for hidden in policy.hidden_paths():
        target = str(hidden)
        if hidden.is_dir():
            command += ["--tmpfs", target, "--remount-ro", target]
        else:
            command += ["--ro-bind", "/dev/null", target]
    start = (cwd or policy.workdir).resolve()
    # ipykernel would take the sandbox's init (pid 1) for an orphaning and exit; the PID
    # namespace and die-with-parent already end the kernel with its parent.
    command += ["--unsetenv", "JPY_PARENT_PID", "--setenv", "TMPDIR", "/tmp"]
    command += _matplotlib_env()
    command += ["--chdir", str(start), "--"]
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
        "--unshare-net",
        "--",
        "env",
        "--default-signal=INT",
        "true",
    ]
