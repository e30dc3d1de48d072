"""The environment sandboxed code sees: an allow-list, not lmc's own environment.

lmc's environment holds the person's API keys and tokens (``OPENAI_API_KEY``,
``GITHUB_TOKEN``, ``HF_TOKEN``, ``LMC_SERVER_TOKEN``...). A kernel gets only the names below,
what the kernel itself needs (set by lmc), and names the person lists in ``sandbox.env``;
a name that looks like a credential passes only when it is listed by its exact name (a glob
in ``sandbox.env`` never lets one through). The filtered dictionary is what bubblewrap
itself is started with, so no value appears on a command line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["ALLOWED", "looks_like_credential", "sandbox_env"]

#: Names (or globs) every kernel may see.
ALLOWED: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "LINES",
    "TZ",
    "SHELL",
    "PWD",
    # what the kernels and their languages need to find their libraries
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONIOENCODING",
    "PYTHONUNBUFFERED",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "JUPYTER_PATH",
    "JUPYTER_DATA_DIR",
    "IPYTHONDIR",
    "MPLBACKEND",
    "MPLCONFIGDIR",
    "MATPLOTLIBRC",
    "R_HOME",
    "R_LIBS",
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "NODE_PATH",
    "LD_LIBRARY_PATH",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_DIRS",
    "XDG_CONFIG_DIRS",
    "HF_HOME",
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "EDITOR",
    "NO_COLOR",
    "FORCE_COLOR",
)

_CREDENTIAL = re.compile(
    r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION|COOKIE", re.IGNORECASE
)


def looks_like_credential(name: str) -> bool:
    """``*KEY*``, ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*CREDENTIAL*`` and kin."""
    return _CREDENTIAL.search(name) is not None


def _matcher(patterns: Iterable[str]) -> re.Pattern[str]:
    """One expression for all of ``patterns`` (fnmatch's, case-sensitive): one compile per
    kernel start instead of one per pattern."""
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns))


def sandbox_env(
    env: Mapping[str, str],
    *,
    listed: Iterable[str] = (),
    kernel: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What of ``env`` the code may see: the allow-list and ``listed`` names (a credential
    only by its exact name), then ``kernel`` (what lmc sets for the kernel) on top."""
    exact = {name for name in listed if not any(c in name for c in "*?[")}
    allowed = _matcher((*ALLOWED, *listed))
    passed = {
        name: value
        for name, value in env.items()
        if name in exact or (allowed.match(name) and not looks_like_credential(name))
    }
    for name, value in (kernel or {}).items():
        if name in exact or not looks_like_credential(name):
            passed[name] = value
    return passed
