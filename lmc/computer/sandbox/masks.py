"""The mounts that shape what sandboxed code sees, in the order bubblewrap must make them.

bubblewrap makes mounts in command-line order, and a mount on a folder covers what was
mounted below it before; so every mount here is sorted by the depth of its target (then by
kind: what opens a folder up comes before what closes part of it again). Kinds:

- **seal**: a folder replaced by an empty tmpfs into which each entry that exists now is
  bound back (sockets and hidden entries left out), read-only at the very end. What the host
  creates there later never appears inside: a secret made after the start stays hidden.
  The home folder is always sealed, and so is the nearest existing folder of every hide
  entry that does not exist yet (or holds a glob), unless the code could write there anyway.
  When the home folder is in the writable working directory (or is it), its entries are bound
  back writable except the dot entries (rc files, ``.config``, ``.local``, ``.ssh``...), and
  nothing new can be created at its top level.
- **protect**: read-only binds inside the writable working directory: ``.git``, ``.hg``,
  ``.lmc`` and Python virtual environments, at its top and one level down.
- **write**: the writable binds (working directory, the kernel's own folder, ``keep_writable``).
- **mask**: hidden secrets (an empty read-only tmpfs over a folder, /dev/null over a file),
  host Unix sockets (every path bound now, from /proc/net/unix, outside the sandbox's own
  folders, unless :mod:`.connect_guard` guards the connects) and other lmc sessions'
  runtime folders.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lmc.computer.sandbox.policy import HiddenEntry, SandboxPolicy

__all__ = ["PROTECTED_NAMES", "Mount", "bound_sockets", "mounts"]

#: Folders inside the working directory that run code on the host later (hooks, config).
PROTECTED_NAMES: Final = (".git", ".hg", ".svn", ".jj", ".lmc")
#: How many entries of a folder are looked at for protected names and sockets.
_SCAN_LIMIT: Final = 2000
#: Folders for sockets that other programs keep in a temporary directory.
_VENV_NAMES: Final = (".venv", "venv", "env", ".env", "virtualenv")
_SOCKET_DIRS: Final = ("tmux-", "ssh-", "screen", "emacs", "vscode-", "pulse-", ".X11-unix")

# Sort order among mounts of the same depth.
_BACK, _SEAL, _PROTECT, _WRITE, _MASK = range(5)


@dataclass(frozen=True)
class Mount:
    """One bubblewrap mount: ``args`` at ``target``'s depth, of ``rank``."""

    target: Path
    rank: int
    args: tuple[str, ...]

    @property
    def depth(self) -> int:
        return len(self.target.parts)


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _hide(path: Path) -> Mount:
    target = str(path)
    if path.is_dir():
        return Mount(path, _MASK, ("--tmpfs", target, "--remount-ro", target))
    return Mount(path, _MASK, ("--ro-bind", "/dev/null", target))


@dataclass
class _Plan:
    policy: SandboxPolicy
    writable: list[Path]
    hidden: set[Path]
    home: Path | None
    out: list[Mount]
    sealed: list[Path]

    def seal(self, folder: Path) -> None:
        if folder in self.sealed or folder == Path("/") or folder in self.hidden:
            return
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        self.sealed.append(folder)
        self.out.append(Mount(folder, _SEAL, ("--tmpfs", str(folder))))
        home_writable = folder == self.home and _inside(folder, self.writable)
        for entry in entries[:_SCAN_LIMIT]:
            self._bind_back(folder / entry.name, entry, home_writable)

    def _bind_back(self, path: Path, entry: os.DirEntry[str], home_writable: bool) -> None:
        if path in self.hidden:
            return
        try:
            if entry.is_symlink():
                target = str(path.readlink())
                self.out.append(Mount(path, _BACK, ("--symlink", target, str(path))))
                return
            mode = entry.stat().st_mode
        except OSError:
            return
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return  # sockets (agents, multiplexers), fifos and devices stay out
        # -try: an entry removed between this scan and the start (a database's journal) is
        # simply absent, instead of failing the kernel's start.
        bind = "--bind-try" if home_writable and not entry.name.startswith(".") else "--ro-bind-try"
        self.out.append(Mount(path, _BACK, (bind, str(path), str(path))))


def _missing_anchor(pattern_dir: Path) -> Path:
    """The nearest folder of ``pattern_dir`` that exists."""
    folder = pattern_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.resolve()


def _subfolders(folder: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        entries = list(os.scandir(folder))[:_SCAN_LIMIT]
        return [folder / e.name for e in entries if e.is_dir(follow_symlinks=False)]
    return []


def _protected(root: Path, keep: Sequence[Path]) -> list[Mount]:
    """Read-only binds for repositories and virtual environments in ``root`` and one below
    (a virtual environment two below too: ``root/app/.venv``)."""
    candidates: list[Path] = []
    for folder in [root, *_subfolders(root)]:
        candidates += [folder / name for name in PROTECTED_NAMES]
        if folder != root:
            candidates.append(folder)
            candidates += [folder / name for name in _VENV_NAMES]
    found: list[Mount] = []
    for candidate in candidates:
        if candidate.name in PROTECTED_NAMES:
            wanted = os.path.lexists(candidate)
        else:
            wanted = (candidate / "pyvenv.cfg").is_file()
        real = candidate.resolve() if wanted else None
        if real is not None and real not in keep and real != root:
            found.append(Mount(real, _PROTECT, ("--ro-bind", str(real), str(real))))
    return found


def _socket_masks(folders: Iterable[Path], hidden: set[Path]) -> list[Mount]:
    """Sockets and socket folders at the top of temporary and home folders."""
    masks: list[Mount] = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))[:_SCAN_LIMIT]
        except OSError:
            continue
        for entry in entries:
            path = folder / entry.name
            if path in hidden:
                continue
            try:
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    masks.append(Mount(path, _MASK, ("--ro-bind", "/dev/null", str(path))))
                elif entry.is_dir(follow_symlinks=False) and entry.name.startswith(_SOCKET_DIRS):
                    masks.append(_hide(path))
            except OSError:
                continue
    return masks


#: At most this many bound sockets are masked one by one (a host with more is unusual).
_MAX_BOUND_MASKS: Final = 1000
#: Folders that are private or empty inside the sandbox: their sockets need no mask.
_PRIVATE_INSIDE: Final = (Path("/tmp"), Path("/run"), Path("/dev"), Path("/proc"), Path("/sys"))
_UNIX_TABLE: Final = Path("/proc/net/unix")


def bound_sockets(table: Path = _UNIX_TABLE) -> list[Path]:
    """The paths Unix sockets are bound to on this host now (lmc's network namespace).

    ``connect()`` ignores a read-only mount, so every such socket the sandbox would show is
    covered with /dev/null: the code's connect to it is refused. (Abstract sockets belong to
    the network namespace, which the sandbox has its own of while the network is off.)
    """
    try:
        lines = table.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: set[Path] = set()
    for line in lines:
        fields = line.split(maxsplit=7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found.add(Path(fields[7]))
    return sorted(found)


def _bound_socket_masks(skip: Sequence[Path], hidden: set[Path], sealed: set[Path]) -> list[Mount]:
    """/dev/null over every bound host socket the sandbox would show."""
    masks: list[Mount] = []
    for path in bound_sockets():
        if len(masks) >= _MAX_BOUND_MASKS:
            break
        if _inside(path, [*_PRIVATE_INSIDE, *skip, *hidden]) or path.parent in sealed:
            continue  # private inside, the sandbox's own, hidden, or not bound back
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode) or not _searchable_unprivileged(path):
                continue
        except OSError:
            continue
        masks.append(Mount(path, _MASK, ("--ro-bind", "/dev/null", str(path))))
    return masks


def _searchable_unprivileged(path: Path) -> bool:
    """Every folder above ``path`` can be entered without privilege over others' files.

    Inside bubblewrap's user namespace even root has no power over files of users it does
    not map: a socket in another user's private folder is out of the code's reach anyway,
    and bubblewrap could not mount over it (the kernel's start would fail).
    """
    uid, groups = os.geteuid(), {os.getegid(), *os.getgroups()}
    for folder in path.parents:
        info = folder.stat()
        if info.st_uid == uid:
            continue  # our own: the namespace's owner may enter it
        bit = stat.S_IXGRP if info.st_gid in groups else stat.S_IXOTH
        if not info.st_mode & bit:
            return False
    return True


def _runtime_roots(private_root: Path | None) -> list[Path]:
    """lmc's session folders: this user's and, beside it, other users' (``lmc-UID``).

    Each is covered with an empty tmpfs: no session sees another's kernels or sockets, and
    sockets that come and go with other sessions are never mounted over one by one (one
    vanishing before bubblewrap mounts it would fail the start).
    """
    if private_root is None or not private_root.exists():
        return []
    own = private_root.resolve()
    roots = [own]
    with contextlib.suppress(OSError):
        for entry in os.scandir(own.parent):
            if entry.name.startswith("lmc-") and entry.name != own.name:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        roots.append(Path(entry.path))
    return roots


def _agent_sockets() -> list[Path]:
    """Runtime folders and agent sockets named by the environment."""
    found: list[Path] = []
    for name in ("XDG_RUNTIME_DIR", "TMUX_TMPDIR"):
        value = os.environ.get(name)
        if value and Path(value).is_dir() and Path(value).resolve() != Path("/tmp"):
            found.append(Path(value).resolve())
    sockets = [os.environ.get("SSH_AUTH_SOCK", ""), os.environ.get("GPG_AGENT_INFO", "")]
    bus = os.environ.get("DBUS_SESSION_BUS_ADDRESS", "")
    sockets += [part[5:] for part in bus.replace(";", ",").split(",") if part.startswith("path=")]
    for value in sockets:
        path = Path(value.split(":")[0]) if value else None
        if path is not None and path.is_absolute() and os.path.lexists(path):
            found.append(path.resolve())
    return found


def mounts(
    policy: SandboxPolicy,
    *,
    shared: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    private_root: Path | None = None,
    mask_bound: bool = True,
) -> list[str]:
    """The bubblewrap arguments after the base ones (``/`` read-only, /dev, /proc, /tmp).

    ``mask_bound=False``: no mask over each bound socket (:mod:`.connect_guard` refuses a
    connect to every socket on a read-only mount, whenever it was bound; a mask over a
    socket that vanishes before bubblewrap mounts it would fail the kernel's start)."""
    writable = [Path(p).resolve() for p in policy.writable()]
    keep = policy.kept_writable() if writable else []
    # Each entry looked at once: what exists now is both what is hidden and what seals.
    matched = policy.hidden_matches()
    hidden_now = policy.hidden_paths(matched)
    home = Path.home().resolve() if Path.home().is_dir() else None
    plan = _Plan(policy, writable, set(hidden_now), home, [], [])
    _seal_home_and_anchors(plan, matched)
    sealed = set(plan.sealed)
    out = plan.out
    out += _readable_under_tmp(readable)
    out += _writable_binds(writable, keep, shared, sealed)
    out += [_hide(path) for path in hidden_now if path.parent not in sealed]
    runtime_roots = _runtime_roots(private_root)
    out += [Mount(root, _BACK, ("--tmpfs", str(root))) for root in runtime_roots]
    out += [
        _hide(path)
        for path in _agent_sockets()
        if path.parent not in sealed and not path.is_relative_to("/run")
    ]
    temp_dirs = {Path("/var/tmp"), Path(os.environ.get("TMPDIR") or "/tmp").resolve()}
    out += _socket_masks(sorted(temp_dirs - {Path("/tmp")}), plan.hidden)
    own = [*writable, *keep, *(Path(p).resolve() for p in shared), *runtime_roots]
    masked = {m.target for m in out if m.rank == _MASK}
    out += [
        m
        for m in (_bound_socket_masks(own, plan.hidden, sealed) if mask_bound else [])
        if m.target not in masked and not _inside(m.target, masked)
    ]
    out.sort(key=lambda mount: (mount.depth, mount.rank))
    out, read_only_later = _open_for_shared(out, shared)
    args = [arg for mount in out for arg in mount.args]
    for folder in [*plan.sealed, *read_only_later]:
        args += ["--remount-ro", str(folder)]
    return args


def _open_for_shared(out: list[Mount], shared: Sequence[Path]) -> tuple[list[Mount], list[Path]]:
    """A hidden folder that holds a ``shared`` one (a conversation's kernel state in lmc's
    hidden data directory) is made read-only only at the end: bubblewrap makes the shared
    folder's mount point in it first."""
    # The folders above a shared one: a set looked up once a mount, not each shared folder
    # compared with each of the hundreds of mounts a busy /tmp gives (~15 ms of each start).
    holders = {folder for p in shared for folder in Path(p).resolve().parents}
    later: list[Path] = []
    opened: list[Mount] = []
    for mount in out:
        holds = mount.rank == _MASK and mount.target in holders
        if holds and mount.args[-2:] == ("--remount-ro", str(mount.target)):
            mount = Mount(mount.target, mount.rank, mount.args[:-2])
            later.append(mount.target)
        opened.append(mount)
    return opened, later


def _seal_home_and_anchors(plan: _Plan, matched: Sequence[tuple[HiddenEntry, list[Path]]]) -> None:
    """Seal the home folder, and the nearest existing folder of every hide entry that does not
    exist yet (or holds a glob) unless the code could write there anyway. ``matched``: each
    entry with what exists of it now."""
    if plan.home is not None and plan.home != Path("/"):
        plan.seal(plan.home)
    anchors: dict[Path, Path] = {}  # most entries share one folder (the home folder)
    for entry, found in matched:
        if entry.is_glob or not found:
            folder = entry.anchor()
            anchor = anchors.get(folder)
            if anchor is None:
                anchor = anchors[folder] = _missing_anchor(folder)
            if not _inside(anchor, plan.writable) or anchor == plan.home:
                plan.seal(anchor)


def _readable_under_tmp(readable: Sequence[Path]) -> list[Mount]:
    """Folders the kernel needs that live under /tmp, which is private inside."""
    found: list[Mount] = []
    for directory in readable:
        needed = Path(directory).resolve()
        if needed.is_relative_to("/tmp") and needed.exists():
            found.append(Mount(needed, _BACK, ("--ro-bind", str(needed), str(needed))))
    return found


def _writable_binds(
    writable: Sequence[Path], keep: Sequence[Path], shared: Sequence[Path], sealed: set[Path]
) -> list[Mount]:
    """The writable roots (with their protected entries), ``keep_writable`` and ``shared``."""
    found: list[Mount] = []
    for root in writable:
        if root not in sealed:
            found.append(Mount(root, _WRITE, ("--bind", str(root), str(root))))
        found += _protected(root, keep)
    for path in [*keep, *(Path(p).resolve() for p in shared)]:
        if path.exists():
            found.append(Mount(path, _WRITE, ("--bind", str(path), str(path))))
    return found
