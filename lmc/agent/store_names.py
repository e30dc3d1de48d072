"""Names the conversation store gives, without loading the store (sqlite3, the messages):
``lmc run`` needs a new conversation's id and the default database's path to launch its shell
kernel (:mod:`lmc.cli.head_start`), before the store is opened."""

from __future__ import annotations

import os
from pathlib import Path

from lmc.paths import data_dir

__all__ = ["default_db_path", "new_conversation_id"]


def default_db_path() -> Path:
    """``conversations.db`` in lmc's data directory (``LMC_DATA_DIR`` or the user data dir)."""
    return data_dir() / "conversations.db"


def new_conversation_id() -> str:
    """A fresh conversation id (12 hex digits, from the system's random source as
    :func:`secrets.token_hex` reads it)."""
    return os.urandom(6).hex()
