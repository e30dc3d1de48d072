"""The evaluated state of a prompt's fixed prefix, kept on disk between runs.

A one-shot ``lmc run`` starts a fresh process, so without this every run evaluates the
system and developer messages again. The state of that prefix (llama.cpp's KV cells for
sequence 0) is written once under the user cache directory, keyed by the model file's
identity, the context settings and the prefix's token ids.

File layout: ``MAGIC``, the 32-byte SHA-256 of the key, the 32-byte SHA-256 of the payload,
then the payload (llama.cpp's sequence state). A file that does not check out is stale or
corrupt: it is ignored (and later overwritten), never fatal.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lmc.paths import cache_dir, private_dir

__all__ = ["PrefixStateCache", "default_cache_dir", "prefix_end"]

MAGIC: Final = b"LMCPFX01"
_HEADER: Final = len(MAGIC) + 64
USER_START: Final = "<|start|>user"


def default_cache_dir() -> Path:
    """``$LMC_CACHE_DIR/prefix-states``, by default under the user cache directory."""
    return cache_dir() / "prefix-states"


def prefix_end(prompt: str) -> int:
    """Where the fixed prefix ends: at the first user message, or 0 when there is none."""
    index = prompt.find(USER_START)
    return max(index, 0)


class PrefixStateCache:
    """Files of prefix states in ``directory``, one per (model, settings, prefix) key."""

    def __init__(self, directory: Path, model_identity: str) -> None:
        self.directory = directory
        self._identity = model_identity

    def key(self, token_ids: Sequence[int]) -> bytes:
        digest = hashlib.sha256(self._identity.encode())
        digest.update(b"\0")
        digest.update(",".join(map(str, token_ids)).encode())
        return digest.digest()

    def path(self, key: bytes) -> Path:
        return self.directory / f"{key.hex()[:40]}.state"

    def load(self, token_ids: Sequence[int]) -> bytes | None:
        """The stored state for this prefix, or None when missing, stale or corrupt."""
        key = self.key(token_ids)
        try:
            data = self.path(key).read_bytes()
        except OSError:
            return None
        if len(data) <= _HEADER or not data.startswith(MAGIC):
            return None
        stored_key = data[len(MAGIC) : len(MAGIC) + 32]
        checksum = data[len(MAGIC) + 32 : _HEADER]
        payload = data[_HEADER:]
        if stored_key != key or hashlib.sha256(payload).digest() != checksum:
            return None
        return payload

    def store(self, token_ids: Sequence[int], payload: bytes) -> Path | None:
        """Write the state atomically; a failure to write only costs the next run time."""
        key = self.key(token_ids)
        target = self.path(key)
        try:
            if self.directory == default_cache_dir():
                private_dir(self.directory.parent)  # lmc's own cache dir, not a caller's
            private_dir(self.directory)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".state")
            with os.fdopen(fd, "wb") as out:
                out.write(MAGIC + key + hashlib.sha256(payload).digest())
                out.write(payload)
            Path(tmp).replace(target)
        except OSError:
            return None
        return target
