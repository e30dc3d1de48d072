"""The shell kernel's state kept across kernels: the working directory and exported variables.

After each block, bash's PROMPT_COMMAND (``init.bash``, builtins only: no fork) writes
``$PWD`` and every exported ``NAME=VALUE``, NUL-separated, to a file in the kernel's private
block folder; the kernel compares it with the environment bash started with and, when it
changed, writes ``FOLDER/shell/state.json`` (0600, atomically): ``{"cwd", "exports": {name:
value}, "unset": [names]}``. A new kernel on the same folder starts bash in that directory
with those exports (``restore``), and writes ``restored.json`` for lmc to tell the model.
"""

from __future__ import annotations

import contextlib
import json
import os

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["ShellState"]

#: What bash exports of its own, or lmc's plumbing: never kept.
_IGNORED: Final = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
_DUMP_LIMIT: Final = 4 * 1024 * 1024


def _write_private(path: str, data: dict[str, Any]) -> None:
    temporary = f"{path}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out)
    os.replace(temporary, path)


def _kept(name: str) -> bool:
    return name.isidentifier() and name not in _IGNORED and not name.startswith("LMC_")


class ShellState:
    """Saves and restores one shell kernel's directory and exports in ``folder``."""

    def __init__(self, folder: str, baseline: dict[str, str]) -> None:
        self.folder = os.path.join(folder, "shell")
        self.baseline = {k: v for k, v in baseline.items() if _kept(k)}
        self._last: dict[str, Any] | None = None

    @classmethod
    def from_environment(cls, environ: dict[str, str]) -> tuple[ShellState | None, bool]:
        """The state lmc asked for (``LMC_STATE_DIR``), taken out of ``environ``, and
        whether to restore it first."""
        folder = environ.pop("LMC_STATE_DIR", "")
        environ.pop("LMC_STATE_CAPS", None)
        restore = environ.pop("LMC_STATE_RESTORE", "") == "1"
        # Unset, or not lmc's (relative): never a folder of the working directory.
        return (cls(folder, dict(environ)) if os.path.isabs(folder) else None), restore

    def restore(self, environ: dict[str, str]) -> str | None:
        """Apply the saved state to ``environ`` (bash's environment, changed in place);
        return the directory bash should start in (None: where it would anyway)."""
        try:
            with open(os.path.join(self.folder, "state.json"), encoding="utf-8") as file:
                state = json.load(file)
            cwd, exports, unset = state["cwd"], dict(state["exports"]), list(state["unset"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        back = {k: str(v) for k, v in exports.items() if _kept(k) and "\0" not in str(v)}
        environ.update(back)
        for name in unset:
            environ.pop(str(name), None)
        found = isinstance(cwd, str) and os.path.isdir(cwd)
        report = {"cwd": cwd, "found": found, "exports": sorted(back), "unset": unset}
        with contextlib.suppress(OSError):
            _write_private(os.path.join(self.folder, "restored.json"), report)
        self._last = state
        return cwd if found else None

    def save(self, dump_path: str) -> None:
        """Read bash's dump; write ``state.json`` when it differs from the last one."""
        try:
            with open(dump_path, "rb") as file:
                data = file.read(_DUMP_LIMIT)
        except OSError:
            return
        fields = data.split(b"\0")
        if len(fields) < 2:
            return
        cwd = fields[0].decode("utf-8", "surrogateescape")
        exported: dict[str, str] = {}
        for field in fields[1:]:
            name, equals, value = field.decode("utf-8", "replace").partition("=")
            if equals and _kept(name):
                exported[name] = value
        state = {
            "cwd": cwd,
            "exports": {k: v for k, v in exported.items() if self.baseline.get(k) != v},
            "unset": sorted(set(self.baseline) - set(exported)),
        }
        if state == self._last:
            return
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        _write_private(os.path.join(self.folder, "state.json"), state)
        self._last = state
