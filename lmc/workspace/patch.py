"""The V4A patch format gpt-oss was trained to write (``apply_patch``), parsed and applied.

The grammar and the matching are those of Codex's applier (codex-rs/apply-patch: parser.rs,
lib.rs, seek_sequence.rs), which the format's instructions (gpt-oss's apply_patch.md) describe:

- ``*** Begin Patch`` ... ``*** End Patch`` around the whole (markers trimmed; a patch wrapped
  in a ``<<'EOF'`` heredoc is unwrapped); then file sections:
  ``*** Add File: P`` with ``+`` lines, ``*** Delete File: P``, ``*** Update File: P``
  optionally followed by ``*** Move to: Q``, then hunks;
- a hunk opens with ``@@`` or ``@@ anchor`` (the first may go without), holds `` ``/``+``/``-``
  lines (an empty line is empty context) and may end with ``*** End of File``;
- lines are found from where the previous hunk ended with decreasing strictness: exactly,
  then ignoring trailing whitespace, then ignoring surrounding whitespace, then with typographic
  dashes, quotes and spaces read as ASCII; an ``*** End of File`` hunk is looked for at the end
  first. An updated file always ends with a newline.

Two things beyond Codex: several ``@@ anchor`` lines in a row narrow the place one after the
other (as OpenAI's GPT-4.1 prompting guide documents: ``@@ class A`` then ``@@ def f``), and a
file written with CRLF line ends keeps them.

It is pure and all-or-nothing: :func:`plan_patch` reads the files through a callable and
returns every change, or raises :class:`PatchError` having changed nothing;
:func:`apply_changes` then writes the result through :mod:`lmc.workspace.untrusted` (never
following a link, never outside the working directory, never into a folder the sandbox keeps
read-only), putting back what it wrote if a write fails on the way.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final, Literal

from lmc.computer.sandbox.masks import PROTECTED_NAMES
from lmc.errors import WorkspaceError
from lmc.workspace.patch_guard import hidden_reason
from lmc.workspace.untrusted import (
    checked_parts,
    open_folder,
    read_regular,
    remove_file,
    write_regular,
)

__all__ = [
    "MAX_FILE_BYTES",
    "FileChange",
    "PatchError",
    "apply_changes",
    "apply_patch",
    "parse_patch",
    "plan_patch",
    "workspace_reader",
]

#: Files larger than this are not patched (the model's patch works on text it has read).
MAX_FILE_BYTES: Final = 8 * 1024 * 1024

BEGIN: Final = "*** Begin Patch"
END: Final = "*** End Patch"
ADD: Final = "*** Add File: "
DELETE: Final = "*** Delete File: "
UPDATE: Final = "*** Update File: "
MOVE: Final = "*** Move to: "
END_OF_FILE: Final = "*** End of File"
_HEREDOCS: Final = ("<<EOF", "<<'EOF'", '<<"EOF"')

_PUNCTUATION: Final = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


class PatchError(WorkspaceError):
    """A patch that cannot be applied; ``str()`` names the file and what did not match."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One hunk of an update: where (anchors), what was there and what replaces it."""

    anchors: tuple[str, ...]
    lines: tuple[tuple[str, str], ...]  # (" ", "+" or "-", the text)
    end_of_file: bool

    @property
    def old(self) -> list[str]:
        return [text for marker, text in self.lines if marker != "+"]

    @property
    def new(self) -> list[str]:
        return [text for marker, text in self.lines if marker != "-"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One file section of a patch."""

    kind: Literal["add", "delete", "update"]
    path: str
    contents: str = ""  # add
    move_to: str | None = None  # update
    chunks: tuple[Chunk, ...] = ()  # update


@dataclass(frozen=True, slots=True)
class FileChange:
    """What one section does: ``old`` is None for an added file, ``new`` None for a deleted
    one; ``move_to`` is where an updated file goes."""

    kind: Literal["add", "delete", "update"]
    path: str
    old: bytes | None
    new: bytes | None
    move_to: str | None = None


# -- parsing -----------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """The lines as Rust's ``str::lines`` gives them (a ``\\r`` before ``\\n`` dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _body(text: str) -> list[str]:
    lines = _lines(text.strip())
    if len(lines) >= 4 and lines[0] in _HEREDOCS and lines[-1].endswith("EOF"):
        lines = lines[1:-1]
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the first line of the patch must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"the last line of the patch must be '{END}'")
    return lines[1:-1]


def _hunk_error(number: int, message: str) -> PatchError:
    return PatchError(f"invalid hunk at line {number}, {message}")


def _parse_chunk(lines: Sequence[str], number: int, first: bool) -> tuple[Chunk, int]:
    """One hunk from the start of ``lines``, and how many lines it took."""
    anchors: list[str] = []
    index = 0
    while index < len(lines) and (lines[index] == "@@" or lines[index].startswith("@@ ")):
        if lines[index] != "@@":
            anchors.append(lines[index][3:])
        index += 1
    if index == 0 and not first:
        raise _hunk_error(number, f"expected a hunk to start with @@, got: '{lines[0]}'")
    body: list[tuple[str, str]] = []
    end_of_file = False
    taken = 0
    for line in lines[index:]:
        if line == END_OF_FILE:
            if not taken:
                break
            end_of_file = True
            taken += 1
            break
        marker, rest = line[:1], line[1:]
        if marker in ("", " ", "+", "-"):
            body.append((marker or " ", rest))
        elif taken:
            break  # the start of the next section
        else:
            raise _hunk_error(
                number + index,
                f"unexpected line in an update hunk: '{line}'. Every line should start with "
                "' ' (context line), '+' (added line), or '-' (removed line)",
            )
        taken += 1
    if not taken:
        raise _hunk_error(number + index, "an update hunk does not contain any lines")
    return Chunk(tuple(anchors), tuple(body), end_of_file), index + taken


def _parse_update(lines: Sequence[str], number: int, path: str) -> tuple[Operation, int]:
    index = 1
    move_to = None
    if len(lines) > 1 and lines[1].startswith(MOVE):
        move_to = lines[1][len(MOVE) :]
        index = 2
    chunks: list[Chunk] = []
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        if line.startswith("*"):
            break
        chunk, taken = _parse_chunk(lines[index:], number + index, not chunks)
        chunks.append(chunk)
        index += taken
    if not chunks:
        raise _hunk_error(number, f"the update of '{path}' is empty")
    return Operation("update", path, move_to=move_to, chunks=tuple(chunks)), index


def _parse_section(lines: Sequence[str], number: int) -> tuple[Operation, int]:
    header = lines[0].strip()
    if header.startswith(ADD):
        added = 1
        while added < len(lines) and lines[added].startswith("+"):
            added += 1
        contents = "".join(line[1:] + "\n" for line in lines[1:added])
        return Operation("add", header[len(ADD) :], contents=contents), added
    if header.startswith(DELETE):
        return Operation("delete", header[len(DELETE) :]), 1
    if header.startswith(UPDATE):
        return _parse_update(lines, number, header[len(UPDATE) :])
    raise _hunk_error(
        number,
        f"'{header}' is not a valid file header. Valid headers: '{ADD}{{path}}', "
        f"'{DELETE}{{path}}', '{UPDATE}{{path}}'",
    )


def parse_patch(text: str) -> list[Operation]:
    """The file sections of a patch; :class:`PatchError` (with the line) when it is malformed."""
    lines = _body(text)
    operations: list[Operation] = []
    index = 0
    while index < len(lines):
        operation, taken = _parse_section(lines[index:], index + 2)
        operations.append(operation)
        index += taken
    return operations


# -- matching ----------------------------------------------------------------------------------


def _same(a: Sequence[str], b: Sequence[str], key: Callable[[str], str]) -> bool:
    return all(key(x) == key(y) for x, y in zip(a, b, strict=True))


_KEYS: Final[tuple[Callable[[str], str], ...]] = (
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(_PUNCTUATION),
)


def seek(lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool) -> int | None:
    """Where ``pattern`` begins in ``lines`` at or after ``start``, trying each tolerance in
    turn over the whole range before the next. With ``eof`` the end of the file is tried
    first (Codex looks only there; its comment and OpenAI's reference fall back to ``start``)."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    for begin in (last, start) if eof else (start,):
        for key in _KEYS:
            for i in range(begin, last + 1):
                if _same(lines[i : i + len(pattern)], pattern, key):
                    return i
    return None


def _merged(chunk: Chunk, matched: Sequence[str]) -> list[str]:
    """The hunk's new lines, its context lines as the file has them: a context line found by
    a tolerant match keeps the file's whitespace and punctuation (Codex writes the patch's
    version; OpenAI's reference keeps the file's, as here)."""
    out: list[str] = []
    index = 0
    for marker, text in chunk.lines:
        if marker == " ":
            out.append(matched[index] if index < len(matched) else text)
        if marker != "+":
            index += 1
        else:
            out.append(text)
    return out


def _replacements(
    lines: list[str], path: str, chunks: Sequence[Chunk]
) -> list[tuple[int, int, Sequence[str]]]:
    """(where, how many lines, the new lines) for every hunk, or the first that fails."""
    out: list[tuple[int, int, Sequence[str]]] = []
    at = 0
    for number, chunk in enumerate(chunks, 1):
        for anchor in chunk.anchors:
            found = seek(lines, [anchor], at, eof=False)
            if found is None:
                raise PatchError(f"{path}: hunk {number}: failed to find the @@ line '{anchor}'")
            at = found + 1
        if not chunk.old:  # a pure addition: after its anchor, else at the end (as Codex)
            end = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            out.append((at if chunk.anchors else end, 0, chunk.new))
            continue
        old = chunk.old
        found = seek(lines, old, at, chunk.end_of_file)
        trimmed = found is None and old[-1] == ""  # the empty line is the final newline
        if trimmed:
            old = old[:-1]
            found = seek(lines, old, at, chunk.end_of_file)
        if found is None:
            expected = "\n".join(chunk.old)
            raise PatchError(f"{path}: hunk {number}: failed to find the lines:\n{expected}")
        new = _merged(chunk, lines[found : found + len(old)])
        if trimmed and new and new[-1] == "":
            new.pop()
        out.append((found, len(old), new))
        at = found + len(old)
    return sorted(out, key=lambda r: r[0])


def updated_text(text: str, path: str, chunks: Sequence[Chunk]) -> str:
    """``text`` with the hunks applied; it ends with a newline, in the file's own line ends."""
    crlf = "\n" in text and text.count("\r\n") == text.count("\n")
    lines = (text.replace("\r\n", "\n") if crlf else text).split("\n")
    if lines[-1] == "":
        lines.pop()
    for start, length, new in reversed(_replacements(lines, path, chunks)):
        lines[start : start + length] = new
    lines.append("")
    return ("\r\n" if crlf else "\n").join(lines)


# -- planning and applying ---------------------------------------------------------------------

Reader = Callable[[str], bytes | None]
#: Why a path may not be patched (None: it may): what the sandbox hides or keeps read-only.
Guard = Callable[[str], str | None]


@dataclass(slots=True)
class _Tree:
    """The files as the patch leaves them so far, over what the reader gives."""

    read: Reader
    files: dict[str, bytes | None] = field(default_factory=dict)

    def get(self, path: str) -> bytes | None:
        if path not in self.files:
            self.files[path] = self.read(path)
        return self.files[path]

    def text(self, path: str, why: str) -> str:
        data = self.get(path)
        if data is None:
            raise PatchError(f"{path}: cannot {why}: no such file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise PatchError(f"{path}: cannot {why}: not UTF-8 text") from None


def _checked(path: str, guard: Guard | None = None) -> str:
    """The path as the tree keys it; PatchError for one outside, read-only or hidden."""
    try:
        parts = checked_parts(path)
    except WorkspaceError:
        raise PatchError(f"{path!r} is not a path inside the working directory") from None
    shown = "/".join(parts)
    if any(part in PROTECTED_NAMES for part in parts):
        raise PatchError(f"{shown}: the sandbox keeps this folder read-only")
    why = guard(shown) if guard is not None else None
    if why is not None:
        raise PatchError(f"{shown}: {why}")
    return shown


def _encoded(text: str, path: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the model wrote
        raise PatchError(f"{path}: the new text is not valid Unicode") from None


def plan_patch(text: str, read: Reader, guard: Guard | None = None) -> list[FileChange]:
    """Every change the patch makes, in order, each hunk checked; :class:`PatchError` for the
    first that cannot be made. ``read(path)`` gives a file's bytes (None: no such file; it may
    raise PatchError). Nothing is written."""
    tree = _Tree(read)
    changes: list[FileChange] = []
    for op in parse_patch(text):
        path = _checked(op.path, guard)
        old = tree.get(path)
        if op.kind == "add":
            new = _encoded(op.contents, path)
            changes.append(FileChange("add", path, old, new))
            tree.files[path] = new
        elif op.kind == "delete":
            tree.text(path, "delete it")
            changes.append(FileChange("delete", path, old, None))
            tree.files[path] = None
        else:
            source = tree.text(path, "update it")
            new = _encoded(updated_text(source, path, op.chunks), path)
            target = _checked(op.move_to, guard) if op.move_to else None
            changes.append(FileChange("update", path, old, new, target))
            if target is not None and target != path:
                tree.get(target)
                tree.files[path] = None
            tree.files[target or path] = new
    return changes


@dataclass(slots=True)
class _Effect:
    """What a path held before the patch, what it holds after, and the file it comes from
    (itself, or the source of a move: its permissions are kept)."""

    before: bytes | None
    after: bytes | None
    origin: str


def _effects(changes: Sequence[FileChange]) -> dict[str, _Effect]:
    state: dict[str, _Effect] = {}

    def put(path: str, before: bytes | None, after: bytes | None, origin: str) -> None:
        if path in state:
            state[path].after = after
            state[path].origin = origin if origin != path else state[path].origin
        else:
            state[path] = _Effect(before, after, origin)

    for change in changes:
        if change.kind == "update" and change.move_to and change.move_to != change.path:
            put(change.path, change.old, None, change.path)
            put(change.move_to, None, change.new, change.path)
        else:
            put(change.path, change.old, change.new, change.path)
    return state


def _mode(root: str | Path, path: str) -> int | None:
    parts = tuple(path.split("/"))
    try:
        with open_folder(root, parts[:-1]) as folder:
            return os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode
    except (WorkspaceError, OSError):
        return None


def workspace_reader(root: str | Path) -> Reader:
    """A reader of files inside ``root`` that refuses links, non-files, giants and folders the
    sandbox keeps read-only (a virtual environment: a folder holding ``pyvenv.cfg``)."""

    def read(path: str) -> bytes | None:
        parts = path.split("/")
        try:
            for depth in range(1, len(parts)):
                if read_regular(root, "/".join([*parts[:depth], "pyvenv.cfg"]), 0) is not None:
                    raise PatchError(f"{path}: the sandbox keeps virtual environments read-only")
            data = read_regular(root, path, MAX_FILE_BYTES)
        except PatchError:
            raise
        except (WorkspaceError, OSError) as error:
            raise PatchError(f"{path}: {error}") from None
        if data is not None and len(data) > MAX_FILE_BYTES:
            raise PatchError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        return data

    return read


def _put(root: str | Path, path: str, data: bytes | None, mode: int | None) -> None:
    if data is None:
        remove_file(root, path)
    else:
        write_regular(root, path, data, mode)


def apply_changes(root: str | Path, changes: Sequence[FileChange]) -> None:
    """Make the planned changes inside ``root`` (a file keeps its permissions, a moved file
    takes its source's); when one fails, put back the ones made and raise
    :class:`PatchError`."""
    effects = _effects(changes)
    modes = {path: _mode(root, path) for path in effects}
    done: list[str] = []
    try:
        for path, effect in effects.items():
            if effect.before == effect.after:
                continue
            done.append(path)
            _put(root, path, effect.after, modes[effect.origin])
    except (WorkspaceError, OSError) as error:
        for path in reversed(done):
            with contextlib.suppress(WorkspaceError, OSError):
                _put(root, path, effects[path].before, modes[path])
        raise PatchError(f"{done[-1]}: {error}") from None


def apply_patch(root: str | Path, text: str, hide: Sequence[str] | None = ()) -> list[FileChange]:
    """Check every hunk against the files inside ``root``, then apply them all (or none).

    Paths the sandbox hides or keeps read-only (its defaults, lmc's own folders, ``hide``;
    see :mod:`lmc.workspace.patch_guard`) are refused; ``hide=None`` refuses none of them
    (the sandbox is off: the code itself may write anything)."""
    guard = None if hide is None else partial(hidden_reason, root, hide=hide)
    changes = plan_patch(text, workspace_reader(root), guard)
    apply_changes(root, changes)
    return changes
