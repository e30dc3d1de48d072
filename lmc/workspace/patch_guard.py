"""What ``apply_patch`` may not touch: what the sandbox hides from the code or keeps read-only.

A patch is applied by lmc's own process, outside the sandbox, with the person's rights. When
the working directory holds the home folder (lmc started in ``~``), a patch naming
``.ssh/id_rsa`` (moved to ``stolen.txt``), ``.bashrc`` or lmc's own ``config.toml`` would do
from the host what the sandbox refuses the code: the secrets it hides (``sandbox.hide``, its
defaults and lmc's own data and config folders) and the home folder's dot entries it keeps
read-only. A patch path under any of them is refused; the path is checked as written, without
following a link (the writes themselves never follow one: :mod:`lmc.workspace.untrusted`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from lmc.computer.sandbox.policy import DEFAULT_HIDDEN, check_hide, lmc_private_dirs

__all__ = ["hidden_reason"]


def _under(path: str, pattern: str, is_glob: bool) -> bool:
    """Whether ``path`` is ``pattern`` or inside it (a glob matches the path or a parent)."""
    if not is_glob:
        return path == pattern or path.startswith(pattern.rstrip("/") + "/")
    candidate = PurePosixPath(path)
    return any(fnmatch.fnmatchcase(str(p), pattern) for p in (candidate, *candidate.parents))


def hidden_reason(root: str | Path, relative: str, hide: Sequence[str] = ()) -> str | None:
    """Why the sandbox keeps ``root/relative`` from the code (None: it does not).

    ``root`` is taken as it is and as resolved (the home folder and hide entries are
    compared with both), ``relative`` lexically.
    """
    entries = check_hide((*DEFAULT_HIDDEN, *lmc_private_dirs(), *hide))
    home = os.path.normpath(str(Path.home()))
    homes = {home, str(Path(home).resolve())}
    for base in {os.path.normpath(str(root)), str(Path(root).resolve())}:
        path = os.path.normpath(str(Path(base) / relative))
        for entry in entries:
            for pattern in {entry.pattern, str(Path(entry.pattern).resolve())}:
                if _under(path, pattern, entry.is_glob):
                    return "the sandbox hides it from the code"
        for folder in homes:
            if path.startswith(folder + "/"):
                top = path[len(folder) + 1 :].split("/", 1)[0]
                if top.startswith("."):
                    return "the sandbox keeps the home folder's dot entries read-only"
    return None
