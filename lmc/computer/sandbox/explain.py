"""The one line that tells the person and the model a block ran into the sandbox.

It is appended to the block's output (which the model reads), so the model explains what
happened and how to allow it instead of retrying the same thing. It looks at the error text
the code printed: the sandbox makes the kernel's system calls fail with ordinary errors
(EROFS for a write, ENETUNREACH or ECONNREFUSED for the network, ENOENT for a hidden file,
EACCES for a host socket's connect).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from lmc.computer.sandbox.policy import SandboxPolicy

__all__ = ["PREFIX", "explain_block", "lacked_by"]

PREFIX: Final = "[blocked by the sandbox]"

_WRITE = re.compile(r"(?i:read-only file system)|\bEROFS\b")
_NETWORK = re.compile(
    r"(?i:network is unreachable|connection refused|could not resolve|"
    r"temporary failure in name resolution|name or service not known|failed to resolve|"
    r"no address associated)|\b(?:ENETUNREACH|ECONNREFUSED|EAI_AGAIN|ENOTFOUND)\b|getaddrinfo|"
    r"[\w.:\[\]-]+:\d+ cannot be opened"  # R's socketConnection
)
_MISSING = re.compile(
    r"(?i:no such file|not found|cannot open|can't open|permission denied|"
    r"operation not permitted)|\bENOENT\b"
)


_PROCESSES = re.compile(
    r"(?i:resource temporarily unavailable|cannot fork|fork: retry)|\bEAGAIN\b|BlockingIOError"
)
_SPACE = re.compile(r"(?i:no space left on device)|\bENOSPC\b")
#: A connect refused by the connect guard (Python's traceback, Node's error).
_SOCKET = re.compile(r"(?s:\.connect\(.{0,400}?PermissionError)|\bconnect EACCES\b")


def _limit_reasons(output: str, policy: SandboxPolicy, out_of_memory: bool) -> list[str]:
    limits = policy.limits.describe().split(", ")
    reasons = []
    if _PROCESSES.search(output):
        reasons.append(f"it may start at most {limits[0]} (`sandbox.processes` raises that)")
    if _SPACE.search(output):
        reasons.append(
            f"its private {limits[2]} and {limits[3]} are full "
            "(`sandbox.tmp_size` / `sandbox.shm_size` raise them; the workdir has room)"
        )
    if out_of_memory:
        reasons.append(f"it hit its memory limit, {limits[1]} (`sandbox.memory` raises it)")
    return reasons


def explain_block(output: str, policy: SandboxPolicy, *, out_of_memory: bool = False) -> str | None:
    """The sandbox line for a block's ``output``, or None when the sandbox played no part.
    ``out_of_memory``: the memory limit killed one of the block's processes."""
    if not policy.enabled:
        return None
    reasons = _limit_reasons(output, policy, out_of_memory)
    if _WRITE.search(output):
        where = (
            f"only in {policy.workdir} and /tmp"
            if policy.mode == "workspace"
            else "only in /tmp (read-only mode)"
        )
        reasons.append(
            f"it may write {where}; `--sandbox off` (in the chat: `%sandbox off`) lifts that"
        )
    if not policy.network and _NETWORK.search(output):
        reasons.append("it has no network; `--network` (in the chat: `%network on`) allows it")
    if not policy.network and _SOCKET.search(output):
        reasons.append(
            "it may connect only to Unix sockets in folders it may write (a host "
            "program's socket is refused)"
        )
    hidden = _hidden_mentioned(output, policy) if _MISSING.search(output) else None
    if hidden is not None:
        reasons.append(f"{hidden} is hidden (secrets show empty); `--sandbox off` shows it")
    if not reasons:
        return None
    return f"{PREFIX} {'; '.join(reasons)}."


def lacked_by(output: str, policy: SandboxPolicy) -> str | None:
    """What the block lacked, when running it again with more would help: ``"network"``
    (the network was off and the code could not connect), ``"unsandboxed"`` (a write was
    refused or a hidden path was missing), else None (no sandbox, or a limit it hit)."""
    if not policy.enabled:
        return None
    if not policy.network and _NETWORK.search(output):
        return "network"
    if _WRITE.search(output):
        return "unsandboxed"
    if _MISSING.search(output) and _hidden_mentioned(output, policy) is not None:
        return "unsandboxed"
    return None


def _hidden_mentioned(output: str, policy: SandboxPolicy) -> str | None:
    home = str(Path.home())
    for path in policy.hidden_paths():
        text = str(path)
        short = "~" + text[len(home) :] if text.startswith(home + "/") else text
        if text in output or short in output:
            return short
        # Error messages often print the file inside it (~/.ssh/id_rsa) under another
        # spelling of the home directory; the hidden name with its parent is enough.
        tail = f"{path.parent.name}/{path.name}" if path.parent.name else path.name
        if path.parent == Path(home) and f"/{path.name}" in output:
            return short
        if tail in output:
            return short
    return None
