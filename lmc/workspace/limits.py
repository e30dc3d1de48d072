"""The default caps of a snapshot (a module of its own: importing it starts no git)."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_MAX_FILES", "DEFAULT_MAX_FILE_BYTES"]

#: Files larger than this are left out of snapshots (``checkpoint_max_file_size``).
DEFAULT_MAX_FILE_BYTES: Final = 10 * 1024 * 1024
#: A working directory with more files than this gets no checkpoints (``checkpoint_max_files``).
DEFAULT_MAX_FILES: Final = 50_000
