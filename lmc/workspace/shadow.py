"""Snapshots of a working directory in a shadow git repository in lmc's data directory.

Every command is git plumbing run as ``git --git-dir=SHADOW --work-tree=WORKDIR`` with the
shadow's own index, so the project's own ``.git`` (its refs, index, HEAD, stash) is never
written; git still honours the project's ``.gitignore`` files, and the project's
``.git/info/exclude`` is copied into the shadow's. A snapshot is ``add -A``, ``write-tree``
and ``commit-tree``: unchanged files are not read again (git's index keeps their stat data),
so a snapshot of a typical project takes milliseconds (scripts/bench_checkpoints.py).

Git records only a file's executable bit; the other permission bits (a 0600 secret, a
0664 file) go into the commit message as JSON, so a restore is exact in bytes and modes.
Files over the size cap are left out (and said so); when there are more files than the file
cap, the folder holding most of them (a ``node_modules``, a block's 50,001 outputs) is left out
and said so, and the rest is still snapshotted rather than walked for seconds on every block.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from lmc.errors import WorkspaceError
from lmc.paths import data_dir, host_which, private_dir
from lmc.workspace.fingerprint import Fingerprint, tree_fingerprint
from lmc.workspace.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, biggest_folder
from lmc.workspace.restoring import (
    default_perm,
    remove_paths,
    set_modes,
    tree_entries,
    write_entries,
)
from lmc.workspace.unstorable import unstorable_in
from lmc.workspace.untrusted import UnsafePathError, read_regular

#: How many times a snapshot's ``git add`` is tried while files vanish under it.
_ADD_TRIES: Final = 5

__all__ = ["DEFAULT_MAX_FILES", "DEFAULT_MAX_FILE_BYTES", "ShadowRepo", "Snapshot"]

_TIMEOUT: Final = 120.0
_CONFIG: Final = (
    "-c", "core.autocrlf=false", "-c", "core.fileMode=true", "-c", "core.symlinks=true",
    "-c", "core.quotePath=false", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
    "-c", "gc.auto=0", "-c", "advice.addEmbeddedRepo=false", "-c", "core.safecrlf=false",
    "-c", "core.untrackedCache=true", "-c", "index.version=4",
)  # fmt: skip
_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "lmc",
    "GIT_AUTHOR_EMAIL": "lmc@localhost",
    "GIT_COMMITTER_NAME": "lmc",
    "GIT_COMMITTER_EMAIL": "lmc@localhost",
}
_HEAD_REF: Final = "refs/lmc/head"
_MAX_EXCLUDE_BYTES: Final = 1 << 20
#: Folders a snapshot leaves out for their number of files before it gives up.
_MAX_LEFT_OUT: Final = 8
#: The last snapshot and the files it saw, kept for the next lmc process in this folder.
_LAST_SEEN: Final = "lmc-last-snapshot.json"
#: Entries at most in that record (a larger tree's first block runs git as before).
_KEPT: Final = 5_000


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One state of the working directory: a commit in the shadow repository."""

    commit: str
    tree: str
    #: Files left out for their size (relative paths).
    skipped: tuple[str, ...] = ()
    #: Folders left out for the number of files in them (relative paths).
    left_out: tuple[str, ...] = ()
    #: (path, why) git itself left out: a path too long to open, a name it cannot store.
    unstorable: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class _Listing:
    paths: list[str] = field(default_factory=list)
    large: list[str] = field(default_factory=list)
    modes: dict[str, int] = field(default_factory=dict)  # permission bits git does not keep


def _git() -> str:
    """git from PATH's absolute folders: run with the working directory as its cwd, a bare
    ``git`` would find a ``./git`` the code planted when PATH has ``.`` or an empty entry."""
    return host_which("git") or "git"


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _exclude_line(path: str) -> str:
    """An anchored .gitignore pattern matching exactly ``path``."""
    return "/" + "".join("\\" + c if c in "*?[]\\!# " else c for c in path)


class ShadowRepo:
    """The shadow repository of one working directory (created on first use)."""

    def __init__(
        self,
        workdir: str | Path,
        root: str | Path | None = None,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
        exclude: Sequence[str | Path] = (),
    ) -> None:
        self.workdir = Path(workdir).expanduser().resolve()
        key = hashlib.sha256(str(self.workdir).encode("utf-8", "surrogateescape")).hexdigest()
        base = Path(root) if root is not None else data_dir() / "checkpoints"
        self.git_dir = base / key[:16]
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        # lmc's own files when they are in the working directory (the conversation database,
        # this store): never snapshotted, never restored.
        own = [self.git_dir.parent, *(Path(p).expanduser().resolve() for p in exclude)]
        self._own = sorted({p.relative_to(self.workdir).as_posix() for p in own
                            if p != self.workdir and self.workdir in p.parents})  # fmt: skip
        self._left_out: list[str] = []  # folders with too many files, once found
        self._said: list[str] = []  # what git said while taking the snapshot (stderr lines)
        # The project's .git/info/exclude as it was at this repository's first snapshot
        # (before the session's code ran): the code may write that file when the folder had
        # no .git the sandbox keeps read-only, and a "*" there would hide its new files from
        # "files changed" and from undo.
        self._project_exclude: str | None = None
        self._ready = False
        self._init_lock = threading.Lock()
        self._last: tuple[str, str, Snapshot] | None = None  # (tree, modes json, snapshot)
        self._seen: Fingerprint | None = None  # the working directory when _last was taken

    # -- git ---------------------------------------------------------------------------------

    def _env(self, index: Path | None = None, *, bare: bool = False) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(_IDENTITY)
        env["GIT_CONFIG_NOSYSTEM"] = "1"
        # Nor the person's own: a .gitattributes the code planted may name a filter or diff
        # driver that ~/.gitconfig defines (git-lfs, ...), and git would run it on the host.
        env["GIT_CONFIG_GLOBAL"] = os.devnull
        if not bare:
            env["GIT_DIR"] = str(self.git_dir)
            env["GIT_WORK_TREE"] = str(self.workdir)
            env["GIT_INDEX_FILE"] = str(index or self.git_dir / "index")
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["LC_ALL"] = "C"  # git's own words: what it left out is read from them
        env.pop("LANGUAGE", None)
        return env

    def _add(self, specs: bytes) -> None:
        """``git add -A`` of ``specs``; again (four times at most) when a file vanished or turned
        into a link while git walked the tree (a process the code left running, a build
        removing its temporary files): git stops with "unable to stat" then."""
        for attempt in range(_ADD_TRIES):
            self._said = []
            try:
                self.git(
                    "add", "-A", "--ignore-errors", "--pathspec-from-file=-",
                    "--pathspec-file-nul", data=specs, ok=(0, 1), errors=self._said,
                )  # fmt: skip
                return
            except WorkspaceError as exc:
                if "unable to stat" not in str(exc) or attempt == _ADD_TRIES - 1:
                    raise

    def git(
        self,
        *args: str,
        data: bytes | None = None,
        index: Path | None = None,
        ok: Sequence[int] = (0,),
        bare: bool = False,
        errors: list[str] | None = None,
    ) -> bytes:
        """Run one git command on the shadow repository; its stdout (its stderr's lines
        into ``errors``)."""
        try:
            done = subprocess.run(
                [_git(), *_CONFIG, *args],
                input=data,
                capture_output=True,
                cwd=self.workdir,
                env=self._env(index, bare=bare),
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError as exc:
            raise WorkspaceError(
                "checkpoints need git, and it is not installed",
                hint="install git, or turn checkpoints off (checkpoints = false)",
            ) from exc
        except (OSError, subprocess.SubprocessError) as exc:
            raise WorkspaceError(f"git {args[0]} failed: {exc}") from exc
        if errors is not None:
            errors += done.stderr.decode("utf-8", "surrogateescape").splitlines()
        if done.returncode not in ok:
            text = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise WorkspaceError(f"git {args[0]} failed: {text[-1] if text else done.returncode}")
        return done.stdout

    def _ensure(self) -> None:
        with self._init_lock:  # a background snapshot may be starting too
            self._create()

    def _create(self) -> None:
        if self._ready:
            return
        if not self.workdir.is_dir():
            raise WorkspaceError(f"the working directory {self.workdir} does not exist")
        try:
            private_dir(self.git_dir.parent)
            if not (self.git_dir / "HEAD").exists():
                self.git("init", "--bare", "-q", str(self.git_dir), bare=True)
            (self.git_dir / "lmc-workdir").write_text(str(self.workdir) + "\n", encoding="utf-8")
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create the checkpoint store {self.git_dir}: {exc}"
            ) from exc
        self._ready = True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One lmc at a time works on this shadow repository (two chats in one folder)."""
        self._ensure()
        with (self.git_dir / "lmc.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Record the working directory's files now; the same state gives the same commit."""
        with self._locked():
            seen = tree_fingerprint(self.workdir, self._own)
            if seen is not None and self._last is None:
                self._read_last_seen()
            if seen is not None and self._last is not None and seen.same_as(self._seen):
                return self._last[2]  # not a file changed since: the last snapshot stands
            self._write_excludes()
            self._said = []
            listing = self._list()
            if listing.large:
                data = b"\0".join(_encode(p) for p in listing.large)
                self.git("update-index", "--force-remove", "-z", "--stdin", data=data)
            # Large files are excluded by pathspec, so git never reads them.
            specs = [b".", *(b":(exclude,literal)" + _encode(p) for p in listing.large)]
            self._add(b"\0".join(specs))
            tree = self.git("write-tree").decode().strip()
            modes = json.dumps(listing.modes, sort_keys=True)
            left = (tuple(listing.large), tuple(self._left_out), tuple(unstorable_in(self._said)))
            if self._last is not None and self._last[:2] == (tree, modes):
                commit = self._last[2].commit  # the same files: the same commit
            else:
                commit = self._commit(tree, modes)
            snap = Snapshot(commit, tree, *left)
            self._last = (tree, modes, snap)
            self._seen = seen
            self._write_last_seen()
            return snap

    def _same_store(self) -> list[object]:
        """What, besides the files, decides a snapshot: an earlier process's counts only
        when these match."""
        return [str(self.workdir), self._own, self.max_file_bytes, self.max_files]

    def _read_last_seen(self) -> None:
        """The last snapshot an earlier lmc process took here, and the files it saw: the
        first block of a new ``lmc run`` in an unchanged folder then needs no git either."""
        try:
            data = json.loads((self.git_dir / _LAST_SEEN).read_text(encoding="utf-8"))
            if data["store"] != self._same_store():
                return
            entries = tuple(tuple(entry) for entry in data["entries"])
            seen = Fingerprint(entries, bool(data["racy"]))
            unstorable = tuple((str(p), str(why)) for p, why in data.get("unstorable", []))
            snapshot = Snapshot(
                data["commit"], data["tree"], tuple(data["skipped"]), tuple(data["left_out"]),
                unstorable,
            )  # fmt: skip
            self._last, self._seen = (data["tree"], data["modes"], snapshot), seen
        except (OSError, ValueError, KeyError, TypeError):
            return

    def _write_last_seen(self) -> None:
        target = self.git_dir / _LAST_SEEN
        with contextlib.suppress(OSError):
            seen = self._seen
            if self._last is None or seen is None or seen.racy or len(seen.entries) > _KEPT:
                target.unlink(missing_ok=True)  # nothing an earlier process may trust
                return
            tree, modes, snapshot = self._last
            data = {
                "store": self._same_store(), "commit": snapshot.commit, "tree": tree,
                "modes": modes, "skipped": list(snapshot.skipped),
                "left_out": list(snapshot.left_out), "racy": seen.racy,
                "unstorable": [list(pair) for pair in snapshot.unstorable],
                "entries": seen.entries,
            }  # fmt: skip
            partial = target.with_name(target.name + ".partial")
            partial.write_text(json.dumps(data), encoding="utf-8")
            partial.replace(target)

    def _commit(self, tree: str, modes: str) -> str:
        # Each snapshot's parent is the one before, so one ref keeps them all (git's own
        # update-ref would cost a process per snapshot: the loose ref is written directly).
        ref = self.git_dir / _HEAD_REF
        try:
            parent = ref.read_text(encoding="ascii").strip()
        except OSError:
            parent = ""
        args = ["commit-tree", tree, "--no-gpg-sign", "-F", "-"]
        if parent:
            args += ["-p", parent]
        message = f"lmc snapshot of {self.workdir}\n\n{modes}\n".encode("utf-8", "surrogateescape")
        commit = self.git(*args, data=message).decode().strip()
        ref.parent.mkdir(parents=True, exist_ok=True)
        partial = ref.with_name(ref.name + ".lock")
        partial.write_text(commit + "\n", encoding="ascii")
        partial.replace(ref)
        return commit

    def _list(self) -> _Listing:
        """The files a snapshot takes (tracked or not ignored), with sizes checked."""
        listing = _Listing()
        folders: dict[str, bool] = {}
        for raw in self._ls_files():
            path = raw.decode("utf-8", "surrogateescape")
            try:
                if not self._real_folders(path, folders):
                    raise NotADirectoryError(path)  # a folder on its way is now a link
                info = os.lstat(self.workdir / path)
            except OSError:
                listing.paths.append(path)  # deleted since: add -A records that
                continue
            if not stat.S_ISREG(info.st_mode):
                listing.paths.append(path)
                continue
            if info.st_size > self.max_file_bytes:
                listing.large.append(path)
                continue
            listing.paths.append(path)
            perm = stat.S_IMODE(info.st_mode)
            if perm != default_perm(bool(perm & 0o100)):
                listing.modes[path] = perm
        return listing

    def _real_folders(self, path: str, known: dict[str, bool]) -> bool:
        """Whether every folder above ``path`` is a folder, not a link (``lstat`` of the
        file itself would follow a linked folder on the way out of the working directory)."""
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in known:
                try:
                    known[folder] = stat.S_ISDIR(os.lstat(self.workdir / folder).st_mode)
                except OSError:
                    known[folder] = False
            if not known[folder]:
                return False
        return True

    def _ls_files(self) -> list[bytes]:
        """The files a snapshot may take; a folder holding most of too many files is left
        out (said in the snapshot's ``left_out``) and the listing taken again, so that the
        rest is still snapshotted."""
        for _ in range(_MAX_LEFT_OUT):
            paths, complete = self._ls_once()
            if complete:
                return paths
            folder = biggest_folder(p.decode("utf-8", "surrogateescape") for p in paths)
            if folder is None:
                break
            self._left_out.append(folder)
            self.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", f":(literal){folder}")
            self._write_excludes()
        raise WorkspaceError(
            f"{self.workdir} has more than {self.max_files:,} files outside its largest "
            "folders: checkpoints are off here",
            hint="raise checkpoint_max_files, add a .gitignore, or work in a smaller folder",
        )

    def _ls_once(self) -> tuple[list[bytes], bool]:
        """``git ls-files`` streamed, stopped when there are too many files: (the paths,
        whether that is all of them)."""
        command = [_git(), *_CONFIG, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        with tempfile.TemporaryFile() as said:  # a pipe could fill while stdout is read
            data, complete = self._stream(command, said)
            said.seek(0)
            self._said += said.read(1 << 20).decode("utf-8", "surrogateescape").splitlines()
        return [p for p in bytes(data).split(b"\0") if p], complete

    def _stream(self, command: list[str], said: IO[bytes]) -> tuple[bytearray, bool]:
        """``command``'s stdout until it ends or holds more than the file cap of names."""
        try:
            process = subprocess.Popen(
                command, cwd=self.workdir, env=self._env(), stdout=subprocess.PIPE, stderr=said
            )
        except OSError as exc:
            raise WorkspaceError(f"git ls-files failed: {exc}") from exc
        assert process.stdout is not None
        data = bytearray()
        count = 0
        complete = True
        try:
            while chunk := process.stdout.read(65536):
                data += chunk
                count += chunk.count(0)
                if count > self.max_files:
                    complete = False
                    break
        finally:
            process.stdout.close()
            if process.poll() is None:
                process.kill()
            process.wait()
        return data, complete

    def _project_excludes(self) -> str:
        """The project's own .git/info/exclude, read once (see ``_project_exclude``)."""
        if self._project_exclude is None:
            text = ""
            with contextlib.suppress(OSError, UnicodeDecodeError, UnsafePathError):
                # the model's to write: never through a link, never more than 1 MiB
                data = read_regular(self.workdir, ".git/info/exclude", _MAX_EXCLUDE_BYTES)
                text = (data or b"")[:_MAX_EXCLUDE_BYTES].decode("utf-8")
            self._project_exclude = text
        return self._project_exclude

    def _write_excludes(self) -> None:
        """The shadow's info/exclude: the project's own, and lmc's own files."""
        text = self._project_excludes()
        left_out = (_exclude_line(p) for p in [*self._own, *self._left_out])
        text = "\n".join([text.rstrip("\n"), *left_out]) + "\n"
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        target = info / "exclude"
        with contextlib.suppress(OSError):
            if target.read_text(encoding="utf-8") == text:
                return
        target.write_text(text, encoding="utf-8")

    # -- reading -----------------------------------------------------------------------------

    def modes(self, commit: str) -> dict[str, int]:
        """The permission bits the snapshot ``commit`` recorded beyond git's own."""
        text = self.git("cat-file", "commit", commit).decode("utf-8", "surrogateescape")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        for line in reversed(body.splitlines()):
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    break
                return {str(k): int(v) for k, v in data.items()}
        return {}

    def resolve(self, commit: str) -> str:
        """The tree of a snapshot commit."""
        return self.git("rev-parse", f"{commit}^{{tree}}").decode().strip()

    # -- restoring ---------------------------------------------------------------------------

    def restore(
        self, target: str, current: Snapshot, problems: list[str] | None = None
    ) -> list[str]:
        """Make the working directory's files what snapshot ``target`` recorded (files that
        snapshot did not take, such as ignored ones, are left alone); returns the paths
        written or removed. A path that cannot be restored safely (a folder on its way is now
        a link, a file became a folder) is left as it is, and why goes into ``problems``."""
        problems = [] if problems is None else problems
        root = str(self.workdir)
        with self._locked():
            raw = self.git("diff-tree", "-r", "-z", "--no-renames", current.commit, target).split(
                b"\0"
            )
            removing, writing = _restore_plan(raw)
            removed = remove_paths(root, removing, problems)
            entries = tree_entries(self.git, target, writing)
            wanted, had = self.modes(target), self.modes(current.commit)
            written = write_entries(self.git, root, entries, wanted, problems)
            rechmod = {p for p in {*wanted, *had} if wanted.get(p) != had.get(p)}
            rechmod -= {*removing, *writing}
            chmodded = set_modes(root, wanted, sorted(rechmod), problems)
            self._last = self._seen = None
            with contextlib.suppress(OSError):
                (self.git_dir / _LAST_SEEN).unlink(missing_ok=True)
            return sorted({*removed, *written, *chmodded})


def _restore_plan(raw: list[bytes]) -> tuple[list[str], list[str]]:
    """(paths to remove, paths to write) from ``diff-tree -r -z`` current -> target."""
    removed: list[str] = []
    written: list[str] = []
    items = iter(raw)
    for header in items:
        if not header.startswith(b":"):
            continue
        path = next(items, b"").decode("utf-8", "surrogateescape")
        fields = header[1:].split()
        status = fields[4][:1] if len(fields) > 4 else b"M"
        new_mode = fields[1] if len(fields) > 1 else b""
        if status == b"D" or new_mode == b"000000":
            removed.append(path)
        else:
            if status == b"T":
                removed.append(path)  # a file became a link (or back): write it anew
            written.append(path)
    return removed, written
