"""Which folder a conversation's kernels keep their state in (:mod:`lmc.computer.state`).

In lmc's data directory, beside the default conversation database:
``<data dir>/kernel-state/<conversation id>/``; for another database (``--db``, ``db_path``),
``<data dir>/kernel-state/db-<hash of its path>/<conversation id>/``. Never beside a database
that lives in a working directory: the kernel state is lmc's, not the project's. A new
conversation's id is chosen before its first message (:meth:`ConversationStore.create`
takes it), because the kernels start, and bind the folder into their sandbox, while the
person is still typing. ``lmc history delete`` removes the folder with the conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmc.agent.store_names import default_db_path
from lmc.computer.state import KernelState, remove_state
from lmc.paths import data_dir
from lmc.settings import Settings

__all__ = ["attach_state", "delete_state", "kernel_state_for", "state_folder"]


def state_folder(db_path: str | Path | None, conversation_id: str) -> Path | None:
    """The conversation's state folder (None for an in-memory database)."""
    if str(db_path) == ":memory:":
        return None
    root = data_dir() / "kernel-state"
    default = default_db_path().resolve()
    db = Path(db_path).expanduser().resolve() if db_path is not None else default
    if db == default:
        return root / conversation_id
    import hashlib  # only for a database of its own: ~2 ms of ``lmc run``'s start otherwise

    key = hashlib.sha256(str(db).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return root / f"db-{key}" / conversation_id


def kernel_state_for(settings: Settings, conversation_id: str) -> KernelState | None:
    """What ``settings`` keep for this conversation (None: off, a gateway, no database)."""
    if not settings.kernel_state or settings.kernel_gateway:
        return None
    folder = state_folder(settings.db_path, conversation_id)
    if folder is None:
        return None
    return KernelState(
        folder,
        max_value=settings.kernel_state_max_value,
        max_total=settings.kernel_state_max_total,
    )


def attach_state(computer: Any, state: KernelState | None) -> None:
    """Tell a computer where kernels it starts from now on keep their state (one that
    cannot keep state, a test's, is left alone)."""
    keep = getattr(computer, "keep_state", None)
    if keep is not None:
        keep(state)


def delete_state(db_path: str | Path | None, conversation_id: str) -> None:
    folder = state_folder(db_path, conversation_id)
    if folder is not None:
        remove_state(folder)
