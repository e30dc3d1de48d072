"""Kernel state that survives a kernel: where it is kept, and what lmc says about it.

The python kernel snapshots its user's globals after every block, in the kernel itself
(``kernels/python/lmc_state.py``: cloudpickle, a file per name, rewritten only when it
changed, per-value and total caps), and restores the last snapshot when a kernel starts on
the same folder: after the kernel died, after a sandbox change, on ``--resume``. The shell
kernel keeps its working directory and exported variables the same way
(``kernels/lmc_shell``). lmc's side only chooses the folder (one per conversation, 0700,
under lmc's data directory, bound writable into the sandbox and nothing else of the data
directory), passes it in the kernel's environment, and reads the small JSON files the kernel
writes there to tell the model what came back. lmc never unpickles anything: the pickles are
the sandboxed code's own, and only a kernel loads them.

The JSON is written by code the model wrote: it is read with a size cap, and only names that
are identifiers and short, plain reasons are ever shown.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lmc.paths import private_dir

__all__ = [
    "DEFAULT_MAX_TOTAL",
    "DEFAULT_MAX_VALUE",
    "STATEFUL_LANGUAGES",
    "KernelState",
    "listing",
    "remove_state",
    "restore_note",
    "saved_summary",
]

#: Bytes one value may take pickled; beyond it the value is listed as not kept.
DEFAULT_MAX_VALUE: Final = 64 * 1024 * 1024
#: Bytes all values of one kernel may take together.
DEFAULT_MAX_TOTAL: Final = 256 * 1024 * 1024
#: The kernels whose state is kept.
STATEFUL_LANGUAGES: Final = ("python", "shell")
#: The most of a kernel-written JSON file lmc reads.
_JSON_LIMIT: Final = 4 * 1024 * 1024
#: Names listed in one note before "and N more".
_NAMES_SHOWN: Final = 40


@dataclass(frozen=True)
class KernelState:
    """Where a conversation's kernels keep their state, and the caps of the python one."""

    folder: Path
    max_value: int = DEFAULT_MAX_VALUE
    max_total: int = DEFAULT_MAX_TOTAL

    def prepare(self) -> Path:
        """The folder, made (0700, as the folders up to ``kernel-state``) if missing: it is
        bound into the sandbox at launch."""
        private_dir(self.folder)
        for parent in self.folder.parents if "kernel-state" in self.folder.parts else ():
            private_dir(parent)
            if parent.name == "kernel-state":
                break
        return self.folder

    def environment(self, *, restore: bool) -> dict[str, str]:
        """What a kernel is told: the folder, the caps, and whether to restore at start."""
        return {
            "LMC_STATE_DIR": str(self.folder),
            "LMC_STATE_CAPS": f"{self.max_value},{self.max_total}",
            "LMC_STATE_RESTORE": "1" if restore else "0",
        }


def remove_state(folder: Path) -> None:
    """Delete a conversation's kernel state (``lmc history delete``)."""
    shutil.rmtree(folder, ignore_errors=True)


def _read_json(
    folder: Path, kernel: str, name: str, *, take: bool = False
) -> dict[str, Any] | None:
    """``folder/kernel/name``, a kernel-written JSON object, or None (missing, too large, not
    an object, or a link on the way: the sandboxed code may have made ``kernel`` a link to
    any folder of the person's). With ``take`` the file is removed once read."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(folder, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        inner = os.open(kernel, flags | os.O_DIRECTORY, dir_fd=top)
    except OSError:
        os.close(top)
        return None
    os.close(top)
    try:
        fd = os.open(name, flags, dir_fd=inner)
    except OSError:
        os.close(inner)
        return None
    if take:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=inner)
    os.close(inner)
    with os.fdopen(fd, "rb") as file:
        data = file.read(_JSON_LIMIT + 1)
    if len(data) > _JSON_LIMIT:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value.isidentifier() and len(value) <= 64 else None


def _plain(value: object, limit: int = 80) -> str:
    text = value if isinstance(value, str) else ""
    return "".join(c for c in text if c.isascii() and c.isprintable())[:limit]


def _kind(entry: object) -> str:
    """``DataFrame 100×3``, ``list of 4``, ``int``: a value's type and size for the model."""
    if not isinstance(entry, dict):
        return "?"
    kind = _name(entry.get("type")) or "?"
    shape = entry.get("shape")
    if isinstance(shape, list) and all(isinstance(n, int) for n in shape[:8]):
        return f"{kind} {'×'.join(str(n) for n in shape[:8])}"
    length = entry.get("len")
    if isinstance(length, int):
        return f"{kind} of {length}"
    return kind


def _names(mapping: object) -> list[str]:
    if not isinstance(mapping, dict):
        return []
    return sorted(n for n in map(_name, mapping) if n is not None)


def _listed(value: object) -> list[str]:
    """The identifiers of a list the kernel wrote (anything else: none)."""
    if not isinstance(value, list):
        return []
    return sorted({n for n in map(_name, value) if n is not None})


def _enumerate(items: list[str]) -> str:
    shown = items[:_NAMES_SHOWN]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _lost_text(lost: object) -> str:
    if not isinstance(lost, dict):
        return ""
    parts = []
    for name in _names(lost):
        entry = lost[name]
        why = _plain(entry.get("why")) if isinstance(entry, dict) else ""
        parts.append(f"{name} ({_kind(entry)}{': ' + why if why else ''})")
    return _enumerate(parts)


def _python_manifest(folder: Path) -> dict[str, Any] | None:
    return _read_json(folder, "python", "manifest.json")


def _shell_state(folder: Path) -> tuple[str, list[str]] | None:
    state = _read_json(folder, "shell", "state.json")
    if state is None or not isinstance(state.get("cwd"), str):
        return None
    exports = state.get("exports")
    names = sorted(n for n in map(_name, exports or {}) if n is not None)
    return _plain(state["cwd"], 400), names


def restore_note(folder: Path, language: str) -> str | None:
    """What a freshly started kernel brought back, for the start of the next block's output
    (read once: the kernel's report is removed), or None when it restored nothing."""
    if language == "python":
        report = _read_json(folder, "python", "restored.json", take=True)
        if report is None:
            return None
        back = _listed(report.get("restored"))
        back += [n for n in _names(report.get("modules")) if n not in back]
        failed = report.get("failed")
        not_back = _lost_text(report.get("lost"))
        if isinstance(failed, dict):
            extra = [f"{n} ({_plain(failed[n])})" for n in _names(failed)]
            not_back = ", ".join(x for x in (not_back, _enumerate(extra)) if x)
        text = f"[lmc: python state restored: {_enumerate(sorted(back)) or 'nothing'}"
        return text + (f"; not restored: {not_back}]\n" if not_back else "]\n")
    if language == "shell":
        report = _read_json(folder, "shell", "restored.json", take=True)
        if report is None or not isinstance(report.get("cwd"), str):
            return None
        exports = _listed(report.get("exports"))
        named = f"exports {_enumerate(exports)}" if exports else "no exports"
        cwd = _plain(report["cwd"], 400)
        if report.get("found") is False:
            return f"[lmc: shell state restored: {named}; not the working directory {cwd} (gone)]\n"
        return f"[lmc: shell state restored: working directory {cwd}, {named}]\n"
    return None


def saved_summary(folder: Path) -> dict[str, str]:
    """Per language, what its last snapshot will bring back (for the resume note)."""
    found: dict[str, str] = {}
    manifest = _python_manifest(folder)
    if manifest is not None:
        names = sorted({*_names(manifest.get("kept")), *_names(manifest.get("modules"))})
        lost = _lost_text(manifest.get("lost"))
        text = f"its variables come back ({_enumerate(names) or 'none were saved'})"
        found["python"] = text + (f", but not {lost}" if lost else "")
    shell = _shell_state(folder)
    if shell is not None:
        cwd, exports = shell
        named = f" and exports {_enumerate(exports)} come back" if exports else " comes back"
        found["shell"] = f"its working directory {cwd}{named}"
    return found


def listing(folder: Path) -> str | None:
    """The live names and their types (shapes, lengths), for the model after a compaction."""
    lines = []
    manifest = _python_manifest(folder)
    if manifest is not None:
        kept = manifest.get("kept")
        items = [f"{n}: {_kind(kept[n])}" for n in _names(kept)] if isinstance(kept, dict) else []
        modules = manifest.get("modules")
        if isinstance(modules, dict):
            items += [
                f"{n}: module {_name(modules[n]) or _plain(modules[n], 60)}"
                for n in _names(modules)
            ]
        if items:
            lines.append(f"python: {_enumerate(sorted(items))}")
        lost = _lost_text(manifest.get("lost"))
        if lost:
            lines.append(f"python, not kept across kernels: {lost}")
    shell = _shell_state(folder)
    if shell is not None:
        cwd, exports = shell
        lines.append(f"shell: in {cwd}" + (f", exports {_enumerate(exports)}" if exports else ""))
    if not lines:
        return None
    return "Live names in the kernels (as of the last block):\n" + "\n".join(lines)


def kernel_options(state: KernelState | None, language: str, *, restore: bool) -> dict[str, Any]:
    """The :class:`~lmc.computer.kernel.KernelSession` keywords that keep ``language``'s
    state in ``state``'s folder (none for a kernel whose state is not kept)."""
    if state is None or language not in STATEFUL_LANGUAGES:
        return {}
    try:
        folder = state.prepare()
    except OSError:  # an unusable data directory: the kernel runs, keeping nothing
        return {}
    return {"env": state.environment(restore=restore), "shared": (folder,)}


def lost_words(state: KernelState | None, *languages: str) -> str:
    """What replaced kernels lose, for the model."""
    if state is None or not set(languages) <= set(STATEFUL_LANGUAGES):
        return "earlier variables and imports are gone"
    return "what was saved after the last block comes back in it"
