"""``lmc history``: the stored conversations (list, show, export, delete)."""

from __future__ import annotations

import sys
from pathlib import Path

from lmc.cli.options import SharedOptions
from lmc.cli.session import report
from lmc.errors import LmcError
from lmc.messages.sanitize import for_terminal

__all__ = ["delete", "export", "list_conversations", "show_conversation"]


def _db(db: str | None) -> str | None:
    """``--db``, else ``db_path`` from the config file or ``LMC_DB_PATH``, else the default."""
    if db is not None:
        return db
    from lmc.config import load_settings

    return load_settings().db_path


def list_conversations(db: str | None) -> int:
    from lmc.agent.storage import ConversationStore

    try:
        with ConversationStore(_db(db)) as store:
            conversations = store.list_conversations()
    except LmcError as exc:
        return report(exc, verbose=False)
    if not conversations:
        sys.stderr.write("lmc: no stored conversations yet (start one with `lmc`)\n")
        return 0
    width = max(len(info.id) for info in conversations)
    for info in conversations:
        when = info.updated_at[:16].replace("T", " ")
        count = f"{info.message_count} msg"
        tokens = f"{info.tokens} tok"
        sys.stdout.write(
            f"{info.id:<{width}}  {when}  {count:>7}  {tokens:>10}  {for_terminal(info.title)}\n"
        )
    return 0


def show_conversation(db: str | None, conversation: str, *, show_reasoning: bool) -> int:
    from lmc.agent.storage import ConversationStore
    from lmc.cli.session import make_output
    from lmc.config import load_settings

    try:
        with ConversationStore(_db(db)) as store:
            messages = store.load(store.resolve(conversation))
        settings = load_settings({"show_reasoning": show_reasoning or None})
        output = make_output(SharedOptions(), settings)
    except LmcError as exc:
        return report(exc, verbose=False)
    for message in messages:
        output.renderer.feed(message)
    output.renderer.close()
    return 0


def export(db: str | None, conversation: str, output: str | None, fmt: str | None) -> int:
    from lmc.agent.storage import ConversationStore
    from lmc.terminal.export import (
        FORMATS,
        export_conversation,
        notebook_text,
        to_lmc_json,
        to_markdown,
    )

    if fmt is not None and fmt not in FORMATS:
        sys.stderr.write(f"lmc: error: unknown format {fmt!r} (use ipynb, md or json)\n")
        return 2
    try:
        with ConversationStore(_db(db)) as store:
            full_id = store.resolve(conversation)
            messages = store.load(full_id)
        if output == "-":
            chosen = fmt or "json"
            if chosen == "ipynb":
                text = notebook_text(messages)
            elif chosen == "md":
                text = to_markdown(messages)
            else:
                text = to_lmc_json(messages)
            # Exact for a pipe or a file; drawn safely when it lands on a terminal.
            sys.stdout.write(for_terminal(text) if sys.stdout.isatty() else text)
            return 0
        path = Path(output) if output else Path(f"lmc-{full_id}.{fmt or 'ipynb'}")
        written = export_conversation(messages, path, fmt)
    except LmcError as exc:
        return report(exc, verbose=False)
    sys.stderr.write(f"lmc: exported {len(messages)} messages to {path} ({written})\n")
    return 0


def delete(db: str | None, conversation: str) -> int:
    from lmc.agent.storage import ConversationStore

    try:
        with ConversationStore(_db(db)) as store:
            full_id = store.resolve(conversation)
            store.delete(full_id)
        from lmc.agent.kept_state import delete_state

        delete_state(_db(db), full_id)
    except LmcError as exc:
        return report(exc, verbose=False)
    sys.stderr.write(f"lmc: deleted conversation {full_id}\n")
    return 0
