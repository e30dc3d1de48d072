"""Saving what a run produced (images, HTML) to files the person can open."""

from __future__ import annotations

import base64
import binascii
import itertools
import time
from pathlib import Path

from lmc.errors import MessageError, StorageError
from lmc.paths import private_dir, write_private

__all__ = ["ArtifactStore"]

_SUFFIX = {"base64": ".png", "base64.png": ".png", "base64.jpeg": ".jpg"}


class ArtifactStore:
    """Writes images and HTML under one private directory (0700, files 0600) with readable,
    unique names."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._counter = itertools.count(1)

    def _save(self, suffix: str, data: bytes, what: str) -> Path:
        """Write ``data`` to a new file; a directory that cannot be written is a StorageError
        (the renderer says so in one line and the turn goes on)."""
        try:
            private_dir(self.directory)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            while True:
                path = self.directory / f"{stamp}-{next(self._counter)}{suffix}"
                if not path.exists():
                    return write_private(path, data)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise StorageError(f"the {what} was not saved: {self.directory}: {reason}") from exc

    def save_image(self, fmt: str, content: str) -> tuple[Path, bytes]:
        """Store an LMC image chunk's content; return its path and bytes."""
        if fmt == "path":
            path = Path(content).expanduser()
            try:
                return path, path.read_bytes()
            except OSError:
                return path, b""
        try:
            data = base64.b64decode(content, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise MessageError(f"an image chunk is not valid base64: {exc}") from exc
        return self._save(_SUFFIX.get(fmt, ".png"), data, "image"), data

    def save_html(self, content: str) -> Path:
        """Store an HTML document."""
        return self._save(".html", content.encode("utf-8"), "HTML")
