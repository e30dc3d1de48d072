"""The conversation database: migrations, messages in order, resume, undo, damage."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lmc.agent.migrations import MIGRATIONS, migrate
from lmc.agent.storage import ConversationStore
from lmc.errors import StorageError
from lmc.messages import CodeChunk, ConsoleChunk, MessageChunk

USER: MessageChunk = {"role": "user", "type": "message", "content": "What's 34/24?"}
CODE: CodeChunk = {"role": "assistant", "type": "code", "format": "python", "content": "34 / 24"}
OUT: ConsoleChunk = {
    "role": "computer",
    "type": "console",
    "format": "output",
    "content": "1.4166666666666667\n",
}


def test_messages_round_trip_in_order_with_their_harmony(tmp_path: Path) -> None:
    with ConversationStore(tmp_path / "c.db") as store:
        cid = store.create("What's 34/24?")
        assert store.append(cid, USER, "<|start|>user<|message|>What's 34/24?<|end|>") == 0
        assert store.append(cid, CODE) == 1
        assert store.append(cid, OUT, "") == 2
        assert store.load(cid) == [USER, CODE, OUT]
        stored = store.load_stored(cid)
        assert [s.harmony for s in stored] == [
            "<|start|>user<|message|>What's 34/24?<|end|>",
            None,
            "",
        ]
    # A second process opening the same file sees everything.
    with ConversationStore(tmp_path / "c.db") as again:
        [info] = again.list_conversations()
        assert (info.id, info.title, info.message_count) == (cid, "What's 34/24?", 3)
        assert again.load(cid[:6]) == [USER, CODE, OUT]


def test_wal_mode_and_every_migration_recorded(tmp_path: Path) -> None:
    ConversationStore(tmp_path / "c.db").close()
    db = sqlite3.connect(tmp_path / "c.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [row[0] for row in db.execute("SELECT name FROM _lmc_migrations ORDER BY rowid")]
    assert names == [fn.__name__ for fn in MIGRATIONS]
    db.close()


def test_an_old_database_is_migrated_forward(tmp_path: Path) -> None:
    """A database made with only the first migration gains the later ones on open."""
    db = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    first, *_ = MIGRATIONS
    db.execute("CREATE TABLE _lmc_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    first(db)
    db.execute("INSERT INTO _lmc_migrations VALUES (?, 'then')", (first.__name__,))
    db.execute("INSERT INTO conversations VALUES ('abc', 'old', '2024-01-01', '2024-01-01')")
    db.execute(
        "INSERT INTO messages (conversation_id, position, role, type, format, content, "
        "created_at) VALUES ('abc', 0, 'user', 'message', NULL, ?, '2024-01-01')",
        ('{"role": "user", "type": "message", "content": "hi"}',),
    )
    db.close()
    with ConversationStore(tmp_path / "old.db") as store:
        [stored] = store.load_stored("abc")
        assert stored.message["content"] == "hi"
        assert stored.harmony is None
    # Running the migrations again changes nothing.
    db = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    migrate(db)
    assert db.execute("SELECT COUNT(*) FROM _lmc_migrations").fetchone()[0] == len(MIGRATIONS)
    db.close()


def test_truncate_replace_delete_and_listing_order(tmp_path: Path) -> None:
    with ConversationStore(tmp_path / "c.db") as store:
        first = store.create("first")
        second = store.create("second " * 30)
        store.append(first, USER)
        for message in (USER, CODE, OUT):
            store.append(second, message)
        listed = store.list_conversations()
        assert [c.id for c in listed] == [second, first]  # most recently updated first
        assert len(listed[0].title) <= 80 and listed[0].title.endswith("…")
        store.replace(second, 1, {**CODE, "content": "34 / 25"}, "h")
        store.truncate(second, 2)
        assert store.load(second) == [USER, {**CODE, "content": "34 / 25"}]
        assert store.append(second, OUT) == 2
        store.delete(first)
        assert [c.id for c in store.list_conversations()] == [second]


def test_unknown_and_ambiguous_ids_are_clear_errors(tmp_path: Path) -> None:
    with ConversationStore(tmp_path / "c.db") as store:
        with pytest.raises(StorageError, match="no conversation with id 'nope'"):
            store.load("nope")
        ids = {store.create(str(i)) for i in range(40)}
        shared = next(a[:1] for a in ids for b in ids if a != b and a[:1] == b[:1])
        with pytest.raises(StorageError, match="more than one"):
            store.resolve(shared)


def test_a_damaged_row_is_a_storage_error(tmp_path: Path) -> None:
    with ConversationStore(tmp_path / "c.db") as store:
        cid = store.create("x")
        store.append(cid, USER)
    db = sqlite3.connect(tmp_path / "c.db")
    db.execute("UPDATE messages SET content = '{not json'")
    db.commit()
    db.close()
    with (
        ConversationStore(tmp_path / "c.db") as store,
        pytest.raises(StorageError, match="damaged"),
    ):
        store.load(cid)


def test_a_path_that_cannot_be_a_database_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StorageError, match="cannot open"):
        ConversationStore(tmp_path / "dir.db")


def test_default_path_is_under_the_user_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    with ConversationStore() as store:
        assert store.path == tmp_path / "lmc" / "conversations.db"
        assert store.path.exists()
