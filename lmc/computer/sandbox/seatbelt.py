"""The macOS ``sandbox-exec`` profile for a policy (Seatbelt, as Codex CLI uses).

Untested here (lmc is developed and tested on Linux): it is generated from the same policy
and kept small. Reads are allowed except the hidden secrets; writes only under the working
directory (``workspace``), the temporary directories and the kernel's socket directory;
network only to Unix sockets (the kernel's ZeroMQ ipc) unless the policy allows it. macOS
has no PID namespace: processes the code starts with a new session can outlive the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lmc.computer.sandbox.policy import SandboxPolicy

__all__ = ["seatbelt_command", "seatbelt_profile"]

_TEMP = ("/private/tmp", "/private/var/folders", "/dev")


def _quote(path: Path | str) -> str:
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def seatbelt_profile(policy: SandboxPolicy, *, shared: Sequence[Path] = ()) -> str:
    """The Seatbelt profile (SBPL) text for ``policy``."""
    writable = [*_TEMP, *(str(p.resolve()) for p in (*policy.writable(), *shared))]
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        "(allow file-write* " + " ".join(f"(subpath {_quote(p)})" for p in writable) + ")",
    ]
    hidden = policy.hidden_paths()
    if hidden:
        rules = " ".join(f"(subpath {_quote(p)})" for p in hidden)
        lines.append(f"(deny file-read* file-write* {rules})")
    if not policy.network:
        lines += [
            "(deny network*)",
            "(allow network* (remote unix-socket))",
            "(allow network-bind (local unix-socket))",
        ]
    return "\n".join(lines) + "\n"


def seatbelt_command(
    sandbox_exec: str,
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    shared: Sequence[Path] = (),
) -> list[str]:
    """The argv that runs ``argv`` under ``sandbox-exec`` with the generated profile."""
    return [sandbox_exec, "-p", seatbelt_profile(policy, shared=shared), *argv]
