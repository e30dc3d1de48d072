"""What the sandbox allows: a small value that every layer passes along unchanged.

A :class:`SandboxPolicy` says how much the model's code may touch (``workspace``: write only
in the working directory and a private /tmp; ``read-only``: only the private /tmp; ``off``: no
sandbox), whether it has the network, and which paths are hidden (secrets, shown empty). The
tools (:mod:`.bubblewrap`, :mod:`.seatbelt`) turn it into one command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from lmc.errors import ConfigError

__all__ = ["DEFAULT_HIDDEN", "MODES", "Mode", "SandboxPolicy", "check_mode"]

Mode = Literal["off", "workspace", "read-only"]
MODES: Final[tuple[Mode, ...]] = ("off", "workspace", "read-only")

#: Secrets no sandboxed code sees (relative to the home directory), whatever the config says.
DEFAULT_HIDDEN: Final = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
)


def check_mode(value: str) -> Mode:
    """``value`` as a sandbox mode, or a clear :class:`ConfigError`."""
    lowered = value.strip().lower().replace("_", "-")
    if lowered == "readonly":
        lowered = "read-only"
    for mode in MODES:
        if lowered == mode:
            return mode
    raise ConfigError(f"the sandbox mode must be one of {', '.join(MODES)}, not {value!r}")


@dataclass(frozen=True)
class SandboxPolicy:
    """How contained the kernels are. ``workdir`` is absolute (where kernels start)."""

    mode: Mode = "workspace"
    network: bool = False
    workdir: Path = field(default_factory=Path.cwd)
    hide: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def hidden_paths(self) -> list[Path]:
        """Every hidden path that exists now, resolved (links followed), deduplicated."""
        return existing_paths((*DEFAULT_HIDDEN, *self.hide))

    def writable(self) -> list[Path]:
        """Directories the code may write in besides the private /tmp."""
        return [self.workdir] if self.mode == "workspace" else []

    def describe(self) -> str:
        """One line for the person and the model: what the code may do now."""
        if not self.enabled:
            return "sandbox off: code runs with your permissions, network included"
        where = "only in a private /tmp"
        if self.mode == "workspace":
            where = f"in {self.workdir} and a private /tmp"
        network = "network on" if self.network else "no network"
        return f"sandbox {self.mode}: code writes {where}, {network}, secrets hidden"


def existing_paths(patterns: Iterable[str]) -> list[Path]:
    """``patterns`` (``~`` expanded) that exist, resolved, each once, in order."""
    seen: dict[Path, None] = {}
    for pattern in patterns:
        path = Path(pattern).expanduser()
        if not path.is_absolute() or not os.path.lexists(path):
            continue
        seen.setdefault(path.resolve(), None)
    return list(seen)
