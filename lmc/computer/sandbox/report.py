"""Each protection of the sandbox and whether it is active on this machine (``lmc doctor``)."""

from __future__ import annotations

from pathlib import Path

from lmc.computer.sandbox.connect_guard import guard_problem
from lmc.computer.sandbox.detect import find_tool
from lmc.computer.sandbox.env import ALLOWED
from lmc.computer.sandbox.limits import find_backend
from lmc.computer.sandbox.policy import SandboxPolicy
from lmc.computer.sandbox.seccomp import seccomp_problem

__all__ = ["protections"]

Line = tuple[str, bool, str]


def _hidden(policy: SandboxPolicy) -> Line:
    entries = [entry.pattern for entry in policy.hidden_entries]
    home = str(Path.home())
    shown = ["~" + e[len(home) :] if e.startswith(home + "/") else e for e in entries]
    present = len(policy.hidden_paths())
    detail = f"{', '.join(shown[:6])}, ... ({len(shown)} entries, {present} present here)"
    return ("hidden", True, detail + "; new ones made later stay hidden")


def _connects(policy: SandboxPolicy, bubblewrap: bool) -> Line:
    """How a host socket bound after a kernel started is kept out of reach."""
    if policy.network:
        return ("connect", False, "not guarded: the network is on (sockets bound later reachable)")
    problem = guard_problem()
    if problem is not None or not bubblewrap:
        return (
            "connect",
            False,
            f"not guarded: {problem or 'no bubblewrap'}; "
            "a host socket bound after a kernel started is reachable",
        )
    return (
        "connect",
        True,
        "every connect() is made by lmc (seccomp user notification): a Unix socket on a "
        "read-only mount (a host socket bound later) refused, EACCES; Unix datagram sockets "
        "and io_uring refused",
    )


def protections(policy: SandboxPolicy) -> list[Line]:
    """(name, active, detail) for every protection ``policy`` asks for, checked here."""
    if not policy.enabled:
        return [("contained", False, "nothing: the sandbox is off")]
    bubblewrap = find_tool().kind == "bubblewrap" and find_tool().usable
    problem = seccomp_problem()
    backend = find_backend()
    listed = f" + sandbox.env: {', '.join(policy.env)}" if policy.env else ""
    kept = f" (kept writable: {', '.join(policy.keep_writable)})" if policy.keep_writable else ""
    lines: list[Line] = [
        (
            "environment",
            True,
            f"allow-list of {len(ALLOWED)} names{listed}; credentials only by exact name",
        ),
        ("user", bubblewrap, "unprivileged user in a user namespace, no capabilities"),
        (
            "seccomp",
            problem is None and bubblewrap,
            problem or "denies mount, keyctl, ptrace, bpf, TIOCSTI, modules, new namespaces",
        ),
        ("/proc", bubblewrap, "fresh; /proc/sys read-only, /proc/keys and /proc/key-users empty"),
        (
            "sockets",
            bubblewrap,
            "/run, $XDG_RUNTIME_DIR, agent and multiplexer sockets masked; "
            + (
                "host sockets refused by the connect guard"
                if not policy.network and guard_problem() is None
                else "every Unix socket bound on the host when a kernel starts "
                "(/proc/net/unix) covered, so connect() is refused"
            )
            + "; other lmc sessions' kernels invisible"
            + (
                "; abstract sockets reachable with the network"
                if policy.network
                else "; abstract sockets apart (own network namespace)"
            ),
        ),
        _connects(policy, bubblewrap),
        ("repositories", bubblewrap, f".git, .hg, .lmc and venvs read-only in the workdir{kept}"),
        ("home", bubblewrap, "sealed: dot entries read-only, nothing new appears"),
        _hidden(policy),
        (
            "limits",
            backend.limits_memory,
            f"{policy.limits.describe()} via {backend.describe()}",
        ),
        (
            "html",
            not policy.network,
            "pages carry a no-network Content-Security-Policy"
            if not policy.network
            else "pages may fetch from the network (the network is on)",
        ),
        ("mcp", False, "MCP servers run outside the sandbox, with your permissions"),
    ]
    return lines
