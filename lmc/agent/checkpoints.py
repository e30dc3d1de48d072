"""Checkpoints of the person's files around the model's code, and undoing turns with them.

:class:`Checkpointer` is the loop's block hook: before a block runs it snapshots the working
directory (in lmc's process, outside the sandbox, so the code cannot tamper with it); after
the block it snapshots again and, when files changed, gives the ``files`` message that shows
which. Each turn keeps one record: the snapshot before its first block and after its last.

:func:`rewind` undoes the last turns of a stored conversation: the files go back to what they
were before those turns' first block, whatever language changed them, and the messages are
removed. When the files were changed by hand since the last turn, it refuses (unless forced)
rather than overwrite that work. Kernel state (variables, imports, processes) cannot be undone.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lmc.agent.git_guard import GitGuard
from lmc.agent.storage import CheckpointRecord, ConversationStore
from lmc.errors import WorkspaceError
from lmc.messages import FilesChunk, Message
from lmc.messages.sanitize import name_for_terminal
from lmc.workspace.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES

if TYPE_CHECKING:
    from lmc.agent.history import Transcript
    from lmc.workspace.shadow import ShadowRepo, Snapshot

__all__ = [
    "KERNEL_NOTE",
    "Checkpointer",
    "RewindReport",
    "TurnCheckpoint",
    "last_turn_patch",
    "list_checkpoints",
    "plan_rewind",
    "rewind",
]

KERNEL_NOTE = (
    "Kernel state (variables, imports, running processes) cannot be undone: the kernels keep it."
)


def _own_files(store: ConversationStore) -> tuple[Path, ...]:
    """lmc's files a working directory may hold: its data and cache folders, and the
    conversation database and its journals."""
    from lmc.paths import cache_dir, data_dir

    base = store.path
    journals = (base.with_name(base.name + end) for end in ("", "-wal", "-shm", "-journal"))
    return (data_dir(), cache_dir(), *journals)


def _repo(
    workdir: str | Path, root: Path | None, caps: tuple[int, int], store: ConversationStore
) -> ShadowRepo:
    from lmc.workspace.shadow import ShadowRepo

    return ShadowRepo(
        workdir, root, max_file_bytes=caps[0], max_files=caps[1], exclude=_own_files(store)
    )


def _repo_of(
    record: CheckpointRecord, store: ConversationStore, caps: tuple[int, int]
) -> ShadowRepo:
    """The shadow repository a record's snapshots are in, with the caps and exclusions they
    were taken with (a file left out then must be left alone now, not seen as new and
    removed)."""
    return _repo(record.workdir, Path(record.shadow).parent, caps, store)


class Checkpointer:
    """The loop's block hook: snapshots before and after each block, one record a turn."""

    def __init__(
        self,
        *,
        store: Callable[[], ConversationStore],
        conversation: Callable[[], str | None],
        transcript: Transcript,
        workdir: Callable[[], Path],
        root: Path | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
    ) -> None:
        self._store = store
        self._conversation = conversation
        self._transcript = transcript
        self._workdir = workdir
        self._root = root
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._repo: ShadowRepo | None = None
        self._before: Snapshot | None = None
        self.disabled: str | None = None  # why checkpoints are off (said once)
        self._repo_lock = threading.Lock()
        self._told = False
        self._prepared: threading.Thread | None = None
        self._worked = False  # a snapshot succeeded in this session
        self._note: str | None = None
        self._said: set[str] = set()  # what was left out, said once
        #: What the code sets up for git to run, switched off after each block.
        self.git = GitGuard(workdir)
        #: The last block that changed files: its shadow repository and the snapshot commits
        #: before and after it, for consumers that show the change itself (``lmc acp``'s diffs).
        self.last_change: tuple[ShadowRepo, str, str] | None = None

    def repo(self) -> ShadowRepo:
        workdir = self._workdir().resolve()
        with self._repo_lock:
            if self._repo is None or self._repo.workdir != workdir:
                caps = (self.max_file_bytes, self.max_files)
                self._repo = _repo(workdir, self._root, caps, self._store())
            return self._repo

    def _fail(self, exc: WorkspaceError) -> str | None:
        self.disabled = str(exc)
        self._mark_unknown()
        if self._told:
            return None
        self._told = True
        hint = f" ({exc.hint})" if exc.hint else ""
        return (
            f"Checkpoints are off for this session: {exc}{hint}. %undo can still remove messages."
        )

    def prepare(self) -> None:
        """A block is on its way (the model began writing it): its "before" snapshot is
        taken now, in the background, while the model writes and the kernel connects.
        :meth:`before_block` then only checks that nothing changed since (a stat walk)."""
        if self.disabled is not None or self._prepared is not None:
            return
        self._prepared = threading.Thread(
            target=self._snapshot_quietly, name="lmc-checkpoint", daemon=True
        )
        self._prepared.start()

    def close(self) -> None:
        """Wait for a background snapshot (its git processes and their pipes) to end."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.join()

    def _snapshot_quietly(self) -> None:
        with contextlib.suppress(WorkspaceError):
            self.repo().snapshot()  # a failure is said by before_block's own snapshot

    def before_block(self) -> str | None:
        """Snapshot before a block runs; returns a note for the person when that fails."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.join()
        self.git.before()
        if self.disabled is not None:
            return None
        try:
            repo = self.repo()
            self._before = repo.snapshot()
            self._save(repo, self._before, first=True)
            self._worked = True
        except WorkspaceError as exc:
            self._before = None
            return self._fail(exc)
        return None

    def after_block(self) -> FilesChunk | None:
        """Snapshot after the block; the ``files`` message when it changed files."""
        before, self._before = self._before, None
        self.git.after()  # before the snapshot: undo sees what it left
        if before is None or self.disabled is not None:
            return None
        try:
            from lmc.workspace.changes import changes_between

            repo = self.repo()
            after = repo.snapshot()
            self._save(repo, after, first=False)
            self._note = self._left_out(after)
            if after.tree == before.tree:
                return None
            changes = changes_between(repo, before.commit, after.commit)
        except WorkspaceError as exc:
            self._fail(exc)
            return None
        if not changes:
            return None
        content = [change.as_content() for change in changes]
        self.last_change = (repo, before.commit, after.commit)
        return {"role": "computer", "type": "files", "format": "changes", "content": content}

    def after_warning(self) -> str | None:
        """After :meth:`after_block`: what the code set up for git to run (the person and the
        model are both told)."""
        return self.git.warning()

    def _mark_unknown(self) -> None:
        """This turn's files after its code are not known (a snapshot failed): undo must not
        take the model's later changes for the person's."""
        conversation = self._conversation()
        if conversation is None or self._repo is None or not self._worked:
            return  # checkpoints never worked here: undo says "checkpoints off"
        position = self._transcript.last_user_index() or 0
        record = CheckpointRecord(
            position, str(self._repo.workdir), str(self._repo.git_dir), "", ""
        )
        with contextlib.suppress(Exception):  # the database may be what failed
            self._store().save_checkpoint(conversation, record)

    def after_note(self) -> str | None:
        """What the last checkpoint left out, said once per folder or file."""
        note, self._note = self._note, None
        return note

    def _left_out(self, snap: Snapshot) -> str | None:
        folders = [f for f in snap.left_out if f"{f}/" not in self._said]
        files = [f for f in snap.skipped if f not in self._said]
        unstorable = [(p, why) for p, why in snap.unstorable if f"{p}\0{why}" not in self._said]
        self._said.update([*(f"{f}/" for f in folders), *files])
        self._said.update(f"{p}\0{why}" for p, why in unstorable)
        parts = [
            f"{name_for_terminal(path)} left out of checkpoints: {why} (undo leaves it as it is)"
            for path, why in unstorable
        ]
        if folders:
            shown = ", ".join(f"{f}/" for f in folders)
            parts.append(
                f"{shown} left out of checkpoints: more than {self.max_files:,} files "
                "(undo leaves them as they are; raise checkpoint_max_files to keep them)"
            )
        if files:
            shown = ", ".join(files[:5]) + (" ..." if len(files) > 5 else "")
            parts.append(
                f"{shown} left out of checkpoints: larger than {self.max_file_bytes:,} bytes "
                "(undo leaves them as they are; raise checkpoint_max_file_size to keep them)"
            )
        return "\n".join(parts) or None

    def _save(self, repo: ShadowRepo, snap: Snapshot, *, first: bool) -> None:
        conversation = self._conversation()
        if conversation is None:
            return
        position = self._transcript.last_user_index() or 0
        record = CheckpointRecord(
            position, str(repo.workdir), str(repo.git_dir), snap.commit, snap.commit
        )
        store = self._store()
        if first and any(r.position == position for r in store.checkpoints(conversation)):
            # A later block of the same turn: only its end moves.
            return
        store.save_checkpoint(conversation, record)


@dataclass(slots=True)
class RewindReport:
    """What an undo did."""

    turns: int = 0
    messages: int = 0
    ran_code: bool = False  # the undone turns ran code (or called tools)
    restored: list[str] = field(default_factory=list)
    workdir: str | None = None
    checkpointed: bool = False
    #: Paths left as they were, each with why (a folder on the way became a link, ...).
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.messages:
            return ["nothing to undo"]
        plural = "s" if self.messages != 1 else ""
        turns = "turn" if self.turns == 1 else f"{self.turns} turns"
        out = [f"undid the last {turns}: removed {self.messages} message{plural}"]
        if not self.ran_code:
            return out
        if not self.checkpointed:
            out.append("files were not restored: no checkpoint was taken (checkpoints off)")
        elif self.restored:
            names = [name_for_terminal(name) for name in self.restored[:8]]
            shown = ", ".join(names) + (" ..." if len(self.restored) > 8 else "")
            count = len(self.restored)
            out.append(
                f"restored {count} file{'s' if count != 1 else ''} in {self.workdir}: {shown}"
            )
        elif not self.problems:
            out.append(f"the files in {self.workdir} were already as before it")
        out.extend(f"not restored: {problem}" for problem in self.problems[:20])
        if len(self.problems) > 20:
            out.append(f"... and {len(self.problems) - 20} more not restored")
        out.append(KERNEL_NOTE)
        return out


def plan_rewind(messages: list[Message], turns: int) -> RewindReport:
    """How many messages and turns undoing the last ``turns`` turns removes (nothing yet)."""
    if turns < 1:
        raise WorkspaceError(f"the number of turns to undo must be at least 1, got {turns}")
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not starts:
        return RewindReport()
    keep = starts[-min(turns, len(starts))]
    ran = any(
        m["role"] == "assistant" and m["type"] in ("code", "tool_call") for m in messages[keep:]
    )
    return RewindReport(
        turns=len([s for s in starts if s >= keep]), messages=len(messages) - keep, ran_code=ran
    )


@dataclass(frozen=True, slots=True)
class TurnCheckpoint:
    """A turn whose files can be restored: ``%undo N`` goes back to before it."""

    turns_back: int  # 1: the last turn
    prompt: str  # the person's message that started it
    changes: int  # files its code changed


def list_checkpoints(store: ConversationStore, conversation_id: str) -> list[TurnCheckpoint]:
    """The turns with checkpoints, the latest first."""
    from lmc.workspace.changes import changes_between

    messages = store.load(conversation_id)
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    out: list[TurnCheckpoint] = []
    for record in reversed(store.checkpoints(conversation_id)):
        if record.position not in starts or not record.before or not record.after:
            continue
        repo = _repo_of(record, store, (DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES))
        changed = len(changes_between(repo, record.before, record.after))
        content = messages[record.position].get("content")
        prompt = " ".join(content.split()) if isinstance(content, str) else "[audio or image]"
        out.append(TurnCheckpoint(len(starts) - starts.index(record.position), prompt, changed))
    return out


def rewind(
    store: ConversationStore,
    conversation_id: str,
    turns: int = 1,
    *,
    force: bool = False,
    caps: tuple[int, int] = (DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES),
) -> tuple[RewindReport, int]:
    """Undo the last ``turns`` turns of a stored conversation: files, then messages.

    Returns the report and the number of messages kept. Raises :class:`WorkspaceError`,
    changing nothing, when files were changed by hand since the last turn and not ``force``.
    """
    messages = store.load(conversation_id)
    report = plan_rewind(messages, turns)
    keep = len(messages) - report.messages
    if not report.messages:
        return report, keep
    records = [r for r in store.checkpoints(conversation_id) if r.position >= keep]
    if records:
        report.checkpointed = True
        report.workdir = records[0].workdir
        if records[0].before:
            repo = _repo_of(records[0], store, caps)
            report.restored = _restore(repo, records, force=force, problems=report.problems)
        else:
            report.problems.append(
                "no checkpoint was taken before that turn's code (checkpoints went off): "
                "the files it changed stay as they are"
            )
    store.truncate(conversation_id, keep)
    return report, keep


def _restore(
    repo: ShadowRepo, records: list[CheckpointRecord], *, force: bool, problems: list[str]
) -> list[str]:
    from lmc.workspace.changes import changes_between

    if not repo.workdir.is_dir():
        raise WorkspaceError(f"the working directory {repo.workdir} is gone: nothing to restore")
    current = repo.snapshot()
    problems.extend(
        f"{name_for_terminal(path)}: left out of checkpoints ({why}), so undo cannot "
        "restore it and leaves it as it is"
        for path, why in current.unstorable
    )
    if any(not record.after for record in records):
        if not force:
            raise WorkspaceError(
                "checkpoints went off during a turn being undone, so lmc cannot tell that "
                "turn's changes from changes made by hand: nothing was undone",
                hint="%undo --force (or lmc undo --force) restores anyway",
            )
        return repo.restore(records[0].before, current, problems)
    last = records[-1].after
    if not force and repo.resolve(last) != current.tree:
        changed = [name_for_terminal(c.path) for c in changes_between(repo, last, current.commit)]
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        raise WorkspaceError(
            f"{len(changed)} file{'s' if len(changed) != 1 else ''} changed by hand since the "
            f"last turn ({shown}); undo would overwrite them: nothing was undone",
            hint="%undo --force (or lmc undo --force) restores anyway",
        )
    return repo.restore(records[0].before, current, problems)


def last_turn_patch(store: ConversationStore, conversation_id: str) -> str | None:
    """The full diff of the last turn that changed files (``%diff``); None when none did."""
    from lmc.workspace.changes import patch_between

    for record in reversed(store.checkpoints(conversation_id)):
        if not record.before or not record.after:
            continue
        repo = _repo_of(record, store, (DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES))
        if repo.resolve(record.before) != repo.resolve(record.after):
            return patch_between(repo, record.before, record.after)
    return None
