"""``lmc undo``: undo the last turn of a stored conversation, files included."""

from __future__ import annotations

import sys

from lmc.cli.session import report
from lmc.errors import LmcError, WorkspaceError
from lmc.messages.sanitize import for_terminal

__all__ = ["undo"]


def undo(db: str | None, conversation: str | None, turns: int, *, force: bool) -> int:
    """Restore the files the last ``turns`` turns changed and remove their messages."""
    from lmc.agent.checkpoints import rewind
    from lmc.agent.storage import ConversationStore
    from lmc.config import load_settings

    try:
        settings = load_settings()
        with ConversationStore(db or settings.db_path) as store:
            if conversation is None:
                listed = store.list_conversations()
                if not listed:
                    raise LmcError("there is no stored conversation to undo")
                full_id = listed[0].id
            else:
                full_id = store.resolve(conversation)
            caps = (settings.checkpoint_max_file_size, settings.checkpoint_max_files)
            result, _kept = rewind(store, full_id, turns, force=force, caps=caps)
    except WorkspaceError as exc:
        if exc.hint and "--force" in exc.hint:
            exc.hint = "lmc undo --force restores anyway"
        return report(exc, verbose=False)
    except LmcError as exc:
        return report(exc, verbose=False)
    sys.stdout.write(f"conversation {full_id}\n")
    for line in result.lines():  # they name files the code made
        sys.stdout.write(for_terminal(line) + "\n")
    return 0
