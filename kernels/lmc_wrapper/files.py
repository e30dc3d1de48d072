"""The few file helpers the wrapper kernels need, on ``os`` alone.

``shutil`` (which brings bz2 and lzma), ``tempfile`` and ``pathlib`` (fnmatch, urllib.parse)
cost a kernel ~1 MB of private memory and part of its start, for a lookup on PATH, one
private folder and its removal; the kernel's start sits on the way of the first block.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["private_dir", "remove_tree", "which"]

#: Where :func:`private_dir` looks, in ``tempfile.gettempdir``'s order.
_TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")
_TEMP_FOLDERS = ("/tmp", "/var/tmp", "/usr/tmp")


def which(name: str, path: str | None = None) -> str | None:
    """The first executable file ``name`` on ``path`` (default ``$PATH``), as shutil.which."""
    if os.sep in name:
        return name if _executable(name) else None
    folders = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    for folder in folders:
        candidate = os.path.join(folder or os.curdir, name)
        if _executable(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def private_dir(prefix: str, first: str | None = None) -> str:
    """A new folder only its owner can enter, in the first folder that takes one: ``first``
    (the kernel's own folder, which lmc removes with its session even when the kernel is
    killed), then ``$TMPDIR``, ``$TEMP``, ``$TMP``, /tmp, /var/tmp, /usr/tmp (as
    tempfile.mkdtemp)."""
    candidates = [first, *(os.environ.get(name) for name in _TEMP_VARIABLES), *_TEMP_FOLDERS]
    for folder in filter(None, candidates):
        for _ in range(8):
            path = os.path.join(folder, f"{prefix}{os.urandom(6).hex()}")
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except OSError:
                break  # not writable here: the next folder
            return os.path.abspath(path)
    tried = ", ".join(filter(None, candidates))
    raise FileNotFoundError(f"no usable temporary folder (tried {tried})")


def remove_tree(path: str) -> None:
    """Remove ``path`` and what is under it, never following a link; errors are ignored."""
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in list(entries):
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(path)
