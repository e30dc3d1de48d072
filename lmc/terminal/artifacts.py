"""Saving what a run produced (images, HTML) to files the person can open."""

from __future__ import annotations

import base64
import binascii
import itertools
import time
from pathlib import Path

from lmc.errors import MessageError

__all__ = ["ArtifactStore"]

_SUFFIX = {"base64": ".png", "base64.png": ".png", "base64.jpeg": ".jpg"}


class ArtifactStore:
    """Writes images and HTML under one directory with readable, unique names."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._counter = itertools.count(1)

    def _path(self, suffix: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        while True:
            path = self.directory / f"{stamp}-{next(self._counter)}{suffix}"
            if not path.exists():
                return path

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
        path = self._path(_SUFFIX.get(fmt, ".png"))
        path.write_bytes(data)
        return path, data

    def save_html(self, content: str) -> Path:
        """Store an HTML document."""
        path = self._path(".html")
        path.write_text(content, encoding="utf-8")
        return path
