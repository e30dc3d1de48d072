"""Whether a model file is a GGUF that lmc can read, said in one line naming the file.

A model file can be text (an HTML error page saved as .gguf), cut short (an interrupted
download) or corrupt (a length field that points past the end). llama.cpp says only "Failed
to load model from file", and lmc's own metadata reader met such files with OverflowError or
MemoryError (a "bug in lmc"); :func:`check_model_file` turns each into one
:class:`BackendError` before the model is loaded.
"""

from __future__ import annotations

import struct
from pathlib import Path

from lmc.backends._context import read_shape
from lmc.errors import BackendError

__all__ = ["check_model_file", "model_file_problem", "unloadable"]

_MAGIC = b"GGUF"
_HEADER = 24  # magic, version (u32), tensor count (u64), metadata count (u64)


def model_file_problem(path: Path) -> str | None:
    """Why ``path`` is not a GGUF model lmc can read (None: it is)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            head = stream.read(_HEADER)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "is empty (an interrupted download?)"
    if not head.startswith(_MAGIC[: len(head)]):
        return "is not a GGUF model file (it does not start with GGUF)"
    if len(head) < _HEADER:
        return f"is cut short ({size} bytes: an interrupted download?)"
    try:
        shape = read_shape(path)
    except (OverflowError, MemoryError):  # a length field far beyond the file
        return "is a corrupt GGUF file (a length in its metadata is far beyond the file)"
    except (ValueError, OSError, struct.error) as exc:
        detail = str(exc).replace(str(path), "it")
        return f"is a corrupt or truncated GGUF file ({detail})"
    if shape.layers <= 0 or shape.trained_context <= 0:
        return "is a corrupt GGUF file (its metadata gives no layers or context)"
    return None


def check_model_file(path: Path) -> None:
    """Raise :class:`BackendError` naming ``path`` when it is not a readable GGUF model."""
    problem = model_file_problem(path)
    if problem is not None:
        raise BackendError(
            f"the model file {path} {problem}",
            hint="download it again, or pass --model with another GGUF file",
        )


def unloadable(path: Path, why: str) -> BackendError:
    """llama.cpp refused a file whose metadata reads well: most often its tensor data is cut
    short (a download stopped before the end)."""
    return BackendError(
        f"llama.cpp cannot load the model file {path} ({why}): it may be truncated or "
        "corrupt, or too large for this machine's memory",
        hint="download it again, or pass --model with another GGUF file",
    )
