"""Where lmc keeps its files, and how it creates them: private to the person.

The data directory holds what the person typed (prompt history, conversations) and what
their code produced (images, HTML); the cache holds model states. Other users of the machine
have no business reading any of it, so every directory lmc creates for itself is 0700 and
every file 0600, whatever the umask, and an existing lmc directory is tightened on use.

No lmc imports here: every layer may ask where its files go.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "cache_dir",
    "data_dir",
    "host_which",
    "neutral_dir",
    "private_dir",
    "private_file",
    "write_private",
]

PRIVATE_DIR_MODE: Final = 0o700
PRIVATE_FILE_MODE: Final = 0o600


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """History, conversations, outputs and models: ``LMC_DATA_DIR`` or the user data dir."""
    env = os.environ if env is None else env
    if env.get("LMC_DATA_DIR"):
        return Path(env["LMC_DATA_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("lmc"))


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Files lmc can rebuild (prefix states): ``LMC_CACHE_DIR`` or the user cache dir."""
    env = os.environ if env is None else env
    if env.get("LMC_CACHE_DIR"):
        return Path(env["LMC_CACHE_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("lmc"))


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) for lmc's own use: mode 0700, also if it existed.

    Raises ``OSError`` as ``Path.mkdir`` does; callers map it to their own error.
    """
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if path.stat().st_mode & 0o777 != PRIVATE_DIR_MODE:
        path.chmod(PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Make sure ``path`` exists with mode 0600 before anything writes to it.

    Created that way (``O_CREAT`` with 0600, so there is no moment it is readable by others),
    or tightened when an older lmc left it 0644.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != PRIVATE_FILE_MODE:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return path


def write_private(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new or existing file that only the person can read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        if os.fstat(out.fileno()).st_mode & 0o777 != PRIVATE_FILE_MODE:
            os.fchmod(out.fileno(), PRIVATE_FILE_MODE)
        out.write(data)
    return path


def neutral_dir() -> Path:
    """An empty folder of lmc's own to start host-side programs in (probes, MCP servers).

    The working directory is the model's: a program started there loads what the code
    planted (``.Rprofile``, ``ipykernel.py``, ``node_modules``). This folder is in lmc's
    data directory, which the sandbox hides; "/" when that cannot be made.
    """
    try:
        return private_dir(data_dir() / "neutral")
    except OSError:
        return Path("/")


def host_which(name: str) -> str | None:
    """``shutil.which`` over the absolute folders of PATH only: an empty or ``.`` entry
    would find a program the code planted in the working directory."""
    folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
    path = os.pathsep.join(f for f in folders if Path(f).is_absolute())
    return shutil.which(name, path=path)
