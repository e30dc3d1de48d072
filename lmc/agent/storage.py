"""Conversations on disk: a SQLite database, one row per merged LMC message.

Every write commits at once (WAL mode, autocommit), so a process killed at any moment leaves
every message it finished on disk. The schema lives in :mod:`lmc.agent.migrations`.
sqlite3 errors are mapped to :class:`~lmc.errors.StorageError` in :meth:`ConversationStore._db`
and nowhere else.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lmc.agent.migrations import migrate
from lmc.agent.store_names import default_db_path, new_conversation_id
from lmc.errors import StorageError
from lmc.messages import Message, validate_message
from lmc.paths import private_dir, private_file

__all__ = [
    "CheckpointRecord",
    "ConversationInfo",
    "ConversationStore",
    "StoredMessage",
    "TokenUsage",
    "default_db_path",
    "new_conversation_id",
]

_TITLE_LENGTH = 80


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def title_from(text: str) -> str:
    """A one-line title from a person's first message."""
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_LENGTH else line[: _TITLE_LENGTH - 1] + "…"


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """One conversation as listed (no messages)."""

    id: str
    title: str
    created_at: str
    updated_at: str
    message_count: int
    #: Prompt and completion tokens of all its model calls (0 when none were counted).
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one or more model calls."""

    prompt: int = 0
    completion: int = 0
    reasoning: int = 0
    calls: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.reasoning + other.reasoning,
            self.calls + other.calls,
        )

    def describe(self) -> str:
        reasoning = f" (reasoning {self.reasoning})" if self.reasoning else ""
        calls = f"{self.calls} model call{'s' if self.calls != 1 else ''}"
        return f"prompt {self.prompt}, completion {self.completion}{reasoning} in {calls}"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message with the exact Harmony text it contributed to the model's prompt (if known)."""

    message: Message
    harmony: str | None = None
    #: lmc's own facts about the message (a compaction summary's reach), or None.
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """The working directory's snapshots around one turn's code: before its first block and
    after its last (commits in the shadow repository ``shadow``)."""

    position: int  # the turn's user message
    workdir: str
    shadow: str
    before: str
    after: str


class ConversationStore:
    """The conversation database. Safe to share between threads; cheap to open."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._lock = threading.Lock()
        try:
            if str(self.path) != ":memory:":
                # Only the person may read what they said; SQLite gives its -wal and -shm
                # files the database file's mode.
                if path is None:
                    private_dir(self.path.parent)
                else:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                for companion in ("", "-wal", "-shm"):  # tighten what older versions left
                    candidate = self.path.with_name(self.path.name + companion)
                    if companion == "" or candidate.exists():
                        private_file(candidate)
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the conversation database {self.path}: {exc}") from exc
        self._conn = conn
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            migrate(db)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, with sqlite3's errors mapped to StorageError."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StorageError(f"conversation database {self.path}: {exc}") from exc

    # -- conversations ----------------------------------------------------------------------

    def create(self, title: str = "", conversation_id: str | None = None) -> str:
        """Start a conversation (with ``conversation_id`` when chosen before, see
        :func:`new_conversation_id`); returns its id."""
        conversation_id = conversation_id or new_conversation_id()
        now = _now()
        with self._db() as db:
            db.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?,?,?,?)",
                (conversation_id, title_from(title), now, now),
            )
        return conversation_id

    def list_conversations(self) -> list[ConversationInfo]:
        """All conversations, the most recently updated first."""
        with self._db() as db:
            rows = db.execute(
                """
                SELECT c.id, c.title, c.created_at, c.updated_at, COUNT(m.id),
                    (SELECT COALESCE(SUM(u.prompt_tokens + u.completion_tokens), 0)
                     FROM token_usage u WHERE u.conversation_id = c.id)
                FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id
                GROUP BY c.id ORDER BY c.updated_at DESC, c.rowid DESC
                """
            ).fetchall()
        return [ConversationInfo(*row) for row in rows]

    def get(self, conversation_id: str) -> ConversationInfo:
        """One conversation's listing; ``conversation_id`` may be a unique prefix."""
        wanted = self.resolve(conversation_id)
        return next(info for info in self.list_conversations() if info.id == wanted)

    def resolve(self, conversation_id: str) -> str:
        """The full id of the one conversation whose id starts with ``conversation_id``."""
        with self._db() as db:
            rows = db.execute(
                "SELECT id FROM conversations WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 2",
                (conversation_id, _like_prefix(conversation_id)),
            ).fetchall()
        ids = {row[0] for row in rows}
        if conversation_id in ids:
            return conversation_id
        if len(ids) == 1:
            return str(ids.pop())
        if not ids:
            raise StorageError(
                f"no conversation with id {conversation_id!r}",
                hint="`lmc history` lists the stored conversations",
            )
        raise StorageError(f"more than one conversation id starts with {conversation_id!r}")

    def set_title(self, conversation_id: str, title: str) -> None:
        with self._db() as db:
            db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?",
                (title_from(title), conversation_id),
            )

    def delete(self, conversation_id: str) -> None:
        """Remove a conversation and its messages."""
        full_id = self.resolve(conversation_id)
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM messages WHERE conversation_id = ?", (full_id,))
            db.execute("DELETE FROM checkpoints WHERE conversation_id = ?", (full_id,))
            db.execute("DELETE FROM token_usage WHERE conversation_id = ?", (full_id,))
            db.execute("DELETE FROM conversations WHERE id = ?", (full_id,))
            db.execute("COMMIT")

    # -- messages ---------------------------------------------------------------------------

    def load(self, conversation_id: str) -> list[Message]:
        """A conversation's merged LMC messages, in order."""
        return [stored.message for stored in self.load_stored(conversation_id)]

    def load_stored(self, conversation_id: str) -> list[StoredMessage]:
        """A conversation's messages with their Harmony text."""
        full_id = self.resolve(conversation_id)
        with self._db() as db:
            rows = db.execute(
                "SELECT content, harmony, meta FROM messages WHERE conversation_id = ? "
                "ORDER BY position",
                (full_id,),
            ).fetchall()
        out = []
        for content, harmony, meta in rows:
            try:
                message = validate_message(json.loads(content))
                facts = json.loads(meta) if meta else None
            except (ValueError, TypeError) as exc:
                raise StorageError(f"a stored message of {full_id} is damaged: {exc}") from exc
            out.append(StoredMessage(message, harmony, facts if isinstance(facts, dict) else None))
        return out

    def append(
        self,
        conversation_id: str,
        message: Message,
        harmony: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> int:
        """Store one completed message at the end; committed when this returns."""
        message = validate_message(message)
        now = _now()
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                (position,) = db.execute(
                    "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?",
                    (conversation_id,),
                ).fetchone()
                db.execute(
                    """
                    INSERT INTO messages
                        (conversation_id, position, role, type, format, content, harmony,
                         created_at, meta)
                    VALUES (?,?,?,?,?,?,?,?,?)
                    """,
                    (
                        conversation_id,
                        position,
                        message["role"],
                        message["type"],
                        message.get("format"),
                        json.dumps(message, ensure_ascii=False),
                        harmony,
                        now,
                        json.dumps(meta) if meta is not None else None,
                    ),
                )
                db.execute(
                    "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        return int(position)

    def replace(
        self, conversation_id: str, position: int, message: Message, harmony: str | None = None
    ) -> None:
        """Overwrite the message at ``position`` (code the person edited before it ran)."""
        message = validate_message(message)
        with self._db() as db:
            db.execute(
                """
                UPDATE messages SET role = ?, type = ?, format = ?, content = ?, harmony = ?
                WHERE conversation_id = ? AND position = ?
                """,
                (
                    message["role"],
                    message["type"],
                    message.get("format"),
                    json.dumps(message, ensure_ascii=False),
                    harmony,
                    conversation_id,
                    position,
                ),
            )

    def truncate(self, conversation_id: str, keep: int) -> None:
        """Keep only the first ``keep`` messages, and the checkpoints of their turns (``%undo``)."""
        with self._db() as db:
            db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
                (conversation_id, keep),
            )
            db.execute(
                "DELETE FROM checkpoints WHERE conversation_id = ? AND position >= ?",
                (conversation_id, keep),
            )
            db.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?", (_now(), conversation_id)
            )

    # -- checkpoints --------------------------------------------------------------------------

    def save_checkpoint(self, conversation_id: str, record: CheckpointRecord) -> None:
        """Record a turn's snapshots; a later block of the same turn moves only ``after``."""
        with self._db() as db:
            db.execute(
                """
                INSERT INTO checkpoints
                    (conversation_id, position, workdir, shadow, before_commit, after_commit)
                VALUES (?,?,?,?,?,?)
                ON CONFLICT (conversation_id, position) DO UPDATE SET
                    after_commit = excluded.after_commit
                """,
                (
                    conversation_id,
                    record.position,
                    record.workdir,
                    record.shadow,
                    record.before,
                    record.after,
                ),
            )

    def checkpoints(self, conversation_id: str) -> list[CheckpointRecord]:
        """A conversation's checkpoints, oldest turn first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT position, workdir, shadow, before_commit, after_commit FROM checkpoints "
                "WHERE conversation_id = ? ORDER BY position",
                (conversation_id,),
            ).fetchall()
        return [CheckpointRecord(*row) for row in rows]

    # -- token usage ------------------------------------------------------------------------

    def record_usage(self, conversation_id: str, turn: int, usage: TokenUsage) -> None:
        """Add one model call's tokens to the turn it served."""
        with self._db() as db:
            db.execute(
                """
                INSERT INTO token_usage (conversation_id, turn, prompt_tokens,
                    completion_tokens, reasoning_tokens, created_at)
                VALUES (?,?,?,?,?,?)
                """,
                (conversation_id, turn, usage.prompt, usage.completion, usage.reasoning, _now()),
            )

    def usage(self, conversation_id: str) -> dict[int, TokenUsage]:
        """Tokens by turn (the turn's first message position)."""
        with self._db() as db:
            rows = db.execute(
                """
                SELECT turn, SUM(prompt_tokens), SUM(completion_tokens), SUM(reasoning_tokens),
                    COUNT(*)
                FROM token_usage WHERE conversation_id = ? GROUP BY turn ORDER BY turn
                """,
                (conversation_id,),
            ).fetchall()
        return {turn: TokenUsage(p, c, r, n) for turn, p, c, r, n in rows}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
