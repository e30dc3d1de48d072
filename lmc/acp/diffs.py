"""The files a block changed, as ACP diffs: ``{"type": "diff", "path", "oldText", "newText"}``.

The ``files`` chunk names the paths; the texts come from the checkpoint's snapshots around
that block (read from lmc's shadow repository, not from the working directory, which the
next block may already be changing). ``oldText`` is null for a new file; a deleted file's
``newText`` is empty. A binary file, or one too large to show, is named in a line of text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lmc.errors import WorkspaceError

if TYPE_CHECKING:
    from lmc.agent.checkpoints import Checkpointer
    from lmc.workspace.shadow import ShadowRepo

__all__ = ["MAX_DIFF_BYTES", "diff_maker"]

#: Files larger than this (before or after) are named, not shown.
MAX_DIFF_BYTES: Final = 1024 * 1024


def _read(repo: ShadowRepo, commit: str, path: str) -> bytes | None:
    try:
        return repo.git("cat-file", "blob", f"{commit}:{path}")
    except WorkspaceError:
        return None


def _text_of(data: bytes | None) -> str | None:
    if data is None or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def _one(repo: ShadowRepo, before: str, after: str, item: dict[str, Any]) -> dict[str, Any]:
    path, change = str(item.get("path")), item.get("change")
    absolute = str(Path(repo.workdir) / path)
    old = None if change == "added" else _read(repo, before, path)
    new = b"" if change == "deleted" else _read(repo, after, path)
    too_big = max(len(old or b""), len(new or b"")) > MAX_DIFF_BYTES
    old_text, new_text = _text_of(old), _text_of(new)
    if too_big or new_text is None or (old is not None and old_text is None):
        why = "too large to show" if too_big else "binary"
        line = f"{change} {absolute} ({why})"
        return {"type": "content", "content": {"type": "text", "text": line}}
    return {"type": "diff", "path": absolute, "oldText": old_text, "newText": new_text}


def diff_maker(checkpointer: Callable[[], Checkpointer | None]) -> Callable[[object], Any]:
    """For :class:`lmc.acp.updates.Updates`: the diffs of the block that just ran."""

    def diffs(content: object) -> list[dict[str, Any]] | None:
        hooks = checkpointer()
        change = hooks.last_change if hooks is not None else None
        if change is None or not isinstance(content, list):
            return None
        repo, before, after = change
        return [_one(repo, before, after, item) for item in content if isinstance(item, dict)]

    return diffs
