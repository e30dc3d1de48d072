"""What the sandbox allows: a small value that every layer passes along unchanged.

A :class:`SandboxPolicy` says how much the model's code may touch (``workspace``: write only
in the working directory and a private /tmp; ``read-only``: only the private /tmp; ``off``: no
sandbox), whether it has the network, which paths are hidden (secrets), which environment
variables pass (:mod:`.env`), what stays writable on purpose, and the limits
(:mod:`.limits`). The tools (:mod:`.bubblewrap`, :mod:`.seatbelt`) turn it into one command
line; :mod:`.masks` decides the mounts.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Final, Literal

from lmc.computer.sandbox.limits import Limits
from lmc.errors import ConfigError

__all__ = [
    "DEFAULT_HIDDEN",
    "MODES",
    "HiddenEntry",
    "Mode",
    "SandboxPolicy",
    "check_hide",
    "check_mode",
    "check_workdir",
]

Mode = Literal["off", "workspace", "read-only"]
MODES: Final[tuple[Mode, ...]] = ("off", "workspace", "read-only")

#: Secrets no sandboxed code sees, whatever the config says (lmc's own data and config
#: directories are added by :func:`lmc_private_dirs`).
DEFAULT_HIDDEN: Final = (
    # keys and cloud credentials
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
    "~/.config/hub",
    "~/.npmrc",
    "~/.yarnrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/rclone",
    "~/.s3cfg",
    "~/.boto",
    "~/.cache/huggingface/token",
    "~/.cache/huggingface/stored_tokens",
    "~/.huggingface/token",
    "~/.config/op",
    # keyrings and password stores
    "~/.local/share/keyrings",
    "~/.local/share/kwalletd",
    "~/.password-store",
    "~/.pki",
    "~/.config/keepassxc",
    # shell and REPL histories
    "~/.bash_history",
    "~/.zsh_history",
    "~/.zhistory",
    "~/.histfile",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.Rhistory",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.lesshst",
    "~/.viminfo",
    "~/.ipython/profile_default/history.sqlite",
    # browser profiles and cookies, mail
    "~/.mozilla",
    "~/.librewolf",
    "~/.thunderbird",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/.config/opera",
    "~/snap/firefox",
    "~/snap/chromium",
    # terminal multiplexers' sockets
    "~/.screen",
)


def lmc_private_dirs() -> list[str]:
    """lmc's data directory (conversations, prompt history, outputs) and its config."""
    from lmc.paths import data_dir

    config = os.environ.get("LMC_CONFIG")
    if config:
        config_dir = str(Path(config).expanduser())
    else:
        import platformdirs

        config_dir = platformdirs.user_config_dir("lmc")
    return [str(data_dir()), config_dir]


def check_mode(value: str) -> Mode:
    """``value`` as a sandbox mode, or a clear :class:`ConfigError`."""
    lowered = value.strip().lower().replace("_", "-")
    if lowered == "readonly":
        lowered = "read-only"
    for mode in MODES:
        if lowered == mode:
            return mode
    raise ConfigError(f"the sandbox mode must be one of {', '.join(MODES)}, not {value!r}")


def check_workdir(workdir: Path) -> None:
    """A working directory the sandbox can contain (``/`` would make everything writable)."""
    if workdir.resolve() == Path("/"):
        raise ConfigError(
            "the sandbox cannot use / as the working directory (everything would be "
            "writable): start lmc in a project folder or pass --workdir"
        )


@dataclass(frozen=True)
class HiddenEntry:
    """One hide entry made absolute: ``pattern`` (may hold a glob) and, for a glob, the
    directory whose new entries must stay out of sight (``sealed``)."""

    pattern: str
    is_glob: bool

    def matches(self) -> list[Path]:
        """What exists now, resolved."""
        if self.is_glob:
            found = glob.glob(self.pattern, include_hidden=True)  # noqa: PTH207 (absolute)
        else:
            found = [self.pattern] if os.path.lexists(self.pattern) else []
        return [Path(p).resolve() for p in found]

    def anchor(self) -> Path:
        """The deepest directory of the entry that has no glob in it."""
        parts = Path(self.pattern).parts
        literal: list[str] = []
        for part in parts:
            if glob.has_magic(part):
                break
            literal.append(part)
        path = Path(*literal)
        return path if self.is_glob else path.parent


def check_hide(entries: Iterable[str]) -> tuple[HiddenEntry, ...]:
    """``sandbox.hide`` entries (absolute, ``~``, globs) made absolute; an entry lmc cannot
    use is a :class:`ConfigError` naming it (lmc never runs with an entry dropped)."""
    checked: list[HiddenEntry] = []
    home: list[Path] = []  # Path.home(), looked up once (not once an entry)
    for entry in entries:
        text = entry.strip()
        if not text:
            raise ConfigError("sandbox.hide has an empty entry")
        try:
            expanded = str(Path(text).expanduser())
        except RuntimeError:
            raise ConfigError(f"sandbox.hide: {entry!r}: no such user's home directory") from None
        if not Path(expanded).is_absolute():
            raise ConfigError(
                f"sandbox.hide: {entry!r} is relative: give an absolute path, a ~ path or a glob"
            )
        normal = os.path.normpath(expanded)
        magic = glob.has_magic(normal)
        if not magic and not home:
            home.append(Path.home())
        if normal == "/" or (not magic and Path(normal) == home[0]):
            raise ConfigError(f"sandbox.hide: {entry!r} would hide the whole system or home")
        checked.append(HiddenEntry(normal, magic))
    return tuple(checked)


@dataclass(frozen=True)
class SandboxPolicy:
    """How contained the kernels are. ``workdir`` is absolute (where kernels start).

    ``env`` names environment variables the code may see besides the allow-list (a name
    that looks like a credential passes only when it is listed here). ``keep_writable``
    lists paths inside the working directory that stay writable although they would be
    read-only (``.git``, a virtual environment's ``site-packages``).
    """

    mode: Mode = "workspace"
    network: bool = False
    workdir: Path = field(default_factory=Path.cwd)
    hide: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    keep_writable: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    @cached_property
    def hidden_entries(self) -> tuple[HiddenEntry, ...]:
        """Every hide entry (defaults, lmc's own directories, then the person's)."""
        return check_hide((*DEFAULT_HIDDEN, *lmc_private_dirs(), *self.hide))

    def hidden_matches(self) -> list[tuple[HiddenEntry, list[Path]]]:
        """Every hide entry with what exists of it now, resolved (links followed)."""
        return [(entry, entry.matches()) for entry in self.hidden_entries]

    def hidden_paths(
        self, matched: Sequence[tuple[HiddenEntry, list[Path]]] | None = None
    ) -> list[Path]:
        """Every hidden path that exists now (or in ``matched``, :meth:`hidden_matches`
        already taken), resolved, deduplicated."""
        pairs = self.hidden_matches() if matched is None else matched
        return list(dict.fromkeys(path for _entry, found in pairs for path in found))

    def writable(self) -> list[Path]:
        """Directories the code may write in besides the private /tmp."""
        return [self.workdir] if self.mode == "workspace" else []

    def kept_writable(self) -> list[Path]:
        """``keep_writable`` entries made absolute (relative ones are in the workdir)."""
        return [(self.workdir / Path(entry).expanduser()).resolve() for entry in self.keep_writable]

    def describe(self) -> str:
        """One line for the person and the model: what the code may do now."""
        if not self.enabled:
            return "sandbox off: code runs with your permissions, network included"
        where = "only in a private /tmp"
        if self.mode == "workspace":
            where = f"in {self.workdir} and a private /tmp"
        network = "network on" if self.network else "no network"
        return f"sandbox {self.mode}: code writes {where}, {network}, secrets hidden"


def existing_paths(patterns: Sequence[str]) -> list[Path]:
    """``patterns`` (``~`` expanded, globs matched) that exist, resolved, each once."""
    seen: dict[Path, None] = {}
    for entry in check_hide(patterns):
        for path in entry.matches():
            seen.setdefault(path, None)
    return list(seen)
