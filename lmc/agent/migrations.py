"""The conversation database's schema, as a numbered list of migrations (simonw/llm style).

Each migration is a function that takes a connection and changes the schema one step; the
``_lmc_migrations`` table records which ones have run, so opening a database made by an older
lmc brings it up to date and a new one runs them all. Never edit a migration that shipped:
append a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "migrate"]

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS: list[Migration] = []


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@_migration
def m001_conversations_and_messages(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            role TEXT NOT NULL,
            type TEXT NOT NULL,
            format TEXT,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, position)
        )
        """
    )


@_migration
def m002_message_harmony_text(db: sqlite3.Connection) -> None:
    # The exact Harmony text a message contributed to the prompt, so that a resumed
    # conversation renders token for token as the model wrote it (and reuses caches).
    db.execute("ALTER TABLE messages ADD COLUMN harmony TEXT")


@_migration
def m003_token_usage(db: sqlite3.Connection) -> None:
    # Tokens each model call took (prompt, completion, reasoning), by the turn it served:
    # %tokens and `lmc history` show them for every dialect.
    db.execute(
        """
        CREATE TABLE token_usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            turn INTEGER NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )


@_migration
def m004_checkpoints_and_message_meta(db: sqlite3.Connection) -> None:
    # Snapshots of the working directory around each turn's code (issue 21), and lmc's own
    # facts about a message (a compaction summary and what it covers).
    db.execute(
        """
        CREATE TABLE checkpoints (
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            workdir TEXT NOT NULL,
            shadow TEXT NOT NULL,
            before_commit TEXT NOT NULL,
            after_commit TEXT NOT NULL,
            PRIMARY KEY (conversation_id, position)
        )
        """
    )
    db.execute("ALTER TABLE messages ADD COLUMN meta TEXT")


def migrate(db: sqlite3.Connection) -> None:
    """Run every migration not yet applied to ``db``, each in its own transaction.

    ``db`` must be in autocommit mode (``isolation_level=None``) so that the explicit
    transactions here also cover the DDL statements.
    """
    db.execute(
        "CREATE TABLE IF NOT EXISTS _lmc_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
    )
    for fn in MIGRATIONS:
        db.execute("BEGIN IMMEDIATE")  # another process may be migrating the same file
        try:
            applied = db.execute(
                "SELECT 1 FROM _lmc_migrations WHERE name = ?", (fn.__name__,)
            ).fetchone()
            if applied is None:
                fn(db)
                db.execute(
                    "INSERT INTO _lmc_migrations (name, applied_at) VALUES (?, datetime('now'))",
                    (fn.__name__,),
                )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
