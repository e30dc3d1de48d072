"""Which sandbox tool this machine has, and whether it works (probed once per process).

Linux uses bubblewrap (``bwrap``), macOS ``sandbox-exec``. Having the binary is not enough
(a container may forbid namespaces), so the first question runs it once on ``true`` with the
same namespaces a kernel gets; the answer is cached for the process, and bubblewrap's success
for the boot (:mod:`.probe_memory`: 15-35 ms of every ``lmc run``'s start otherwise).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Final, Literal

from lmc.paths import host_which

__all__ = ["INSTALL_HINT", "SandboxTool", "find_tool", "forget_tool"]

#: How a person gets a sandbox tool, for the warning and the error.
INSTALL_HINT: Final = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; "
    "Fedora: `sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`)"
)

_PROBE_TIMEOUT: Final = 10.0


@dataclass(frozen=True)
class SandboxTool:
    """The tool (``kind``), its path, and why it cannot be used (``problem``, None: usable)."""

    kind: Literal["bubblewrap", "seatbelt", "none"]
    path: str | None
    problem: str | None = None

    @property
    def usable(self) -> bool:
        return self.problem is None and self.path is not None


_cache: dict[tuple[str, str | None], SandboxTool] = {}
_cache_lock = threading.Lock()


def find_tool(*, fresh: bool = False) -> SandboxTool:
    """This machine's sandbox tool, probed on first use for the current PATH (``fresh``:
    probed now, whatever was found or remembered before: ``lmc doctor``)."""
    if sys.platform == "darwin":
        path = host_which("sandbox-exec") or (
            "/usr/bin/sandbox-exec" if host_which("/usr/bin/sandbox-exec") else None
        )
        key = ("seatbelt", path)
    else:
        path = host_which("bwrap") if sys.platform.startswith("linux") else None
        key = ("bubblewrap", path)
    with _cache_lock:
        tool = None if fresh else _cache.get(key)
        if tool is None:
            tool = _probe(key[0], path, remembered=not fresh)
            _cache[key] = tool
    return tool


def forget_tool() -> None:
    """Probe again at the next question: a sandboxed kernel failed to start, so what was
    found (or remembered for the boot) may no longer hold."""
    from lmc.computer.sandbox.probe_memory import forget

    with _cache_lock:  # forgotten first: no other thread reads the record back meanwhile
        forget()
        _cache.clear()


def _probe(kind: str, path: str | None, *, remembered: bool) -> SandboxTool:
    if path is None:
        if kind == "bubblewrap" and not sys.platform.startswith("linux"):
            return SandboxTool("none", None, f"no sandbox tool for {sys.platform}")
        name = "bwrap (bubblewrap)" if kind == "bubblewrap" else "sandbox-exec"
        return SandboxTool("none", None, f"{name} is not installed")
    if kind == "bubblewrap":
        from lmc.computer.sandbox import probe_memory
        from lmc.computer.sandbox.bubblewrap import probe_command

        command = probe_command(path)
        if remembered and probe_memory.remembered(path, command):
            return SandboxTool("bubblewrap", path)
    else:
        command = [path, "-p", "(version 1)(allow default)", "/usr/bin/true"]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxTool("bubblewrap" if kind == "bubblewrap" else "seatbelt", path, str(exc))
    tool_kind: Literal["bubblewrap", "seatbelt"] = (
        "bubblewrap" if kind == "bubblewrap" else "seatbelt"
    )
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = said[-1] if said else f"exit status {done.returncode}"
        return SandboxTool(tool_kind, path, f"{path} does not work here: {why}")
    if kind == "bubblewrap":
        from lmc.computer.sandbox import probe_memory

        probe_memory.remember(path, command)
    return SandboxTool(tool_kind, path)
