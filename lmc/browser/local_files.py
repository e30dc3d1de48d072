"""Search a folder of documents: the browser on a machine with no network.

Text, Markdown, reStructuredText and HTML files under the folder are ranked by how often the
query's words occur in them (case-insensitive; every word must occur). Results are
``file://`` URLs; ``open`` reads only files inside the folder, whatever URL the model
writes, so the browser cannot be used to read the rest of the disk.

The folder may be the model's to write (documents in the working directory): a
``leak.md -> ~/.ssh/id_rsa`` its code planted would be followed by lmc's own process, so every
read goes through :mod:`lmc.workspace.untrusted` (a regular file, reached without following a
link anywhere on its way, at most the page cap); a link or a FIFO is no document.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Final
from urllib.parse import unquote, urlparse

from lmc.browser.backends import results_page
from lmc.browser.fetch import MAX_PAGE_BYTES, VIEW_SOURCE
from lmc.browser.page import Page, page_from_html, page_from_text
from lmc.errors import BrowserError, ConfigError, WorkspaceError
from lmc.workspace.untrusted import read_regular

__all__ = ["LocalFilesBackend"]

_SUFFIXES: Final = frozenset({".txt", ".md", ".markdown", ".rst", ".html", ".htm"})
_WORD: Final = re.compile(r"\w+")
_MAX_FILES: Final = 20_000


class LocalFilesBackend:
    """Searches and opens the documents of one folder."""

    name = "local"

    def __init__(self, folder: str | Path) -> None:
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ConfigError(f"--browser local needs a folder of documents: {root} is not one")
        self.root = root.resolve()

    def _documents(self) -> list[Path]:
        found: list[Path] = []
        for path in sorted(self.root.rglob("*")):
            if path.suffix.lower() in _SUFFIXES and _is_regular(path):
                found.append(path)
                if len(found) == _MAX_FILES:
                    break
        return found

    def _read(self, path: Path) -> str | None:
        """The document's text (at most the page cap); None for a link or a non-file."""
        relative = PurePosixPath(path.relative_to(self.root).as_posix())
        try:
            data = read_regular(self.root, relative, MAX_PAGE_BYTES)
        except (WorkspaceError, OSError):
            return None
        return None if data is None else data[:MAX_PAGE_BYTES].decode("utf-8", errors="replace")

    def search(self, query: str, count: int) -> Page:
        words = [w.lower() for w in _WORD.findall(query)]
        if not words:
            return results_page(query, [])
        scored: list[tuple[int, str, Path, str]] = []
        for path in self._documents():
            text = self._read(path)
            if text is None:
                continue
            lower = text.lower()
            counts = [lower.count(word) for word in words]
            if not all(counts):
                continue
            best = max(
                (line.strip() for line in text.splitlines()),
                key=lambda line: sum(line.lower().count(w) for w in words),
            )
            scored.append((-sum(counts), str(path), path, best[:300]))
        scored.sort()
        found = [
            (path.relative_to(self.root).as_posix(), path.as_uri(), snippet)
            for _, _, path, snippet in scored[:count]
        ]
        return results_page(query, found)

    def _path(self, url: str) -> Path:
        parsed = urlparse(url)
        if parsed.scheme not in ("file", ""):
            raise BrowserError(f"the local browser opens only files under {self.root}, not `{url}`")
        path = Path(os.path.normpath(self.root / unquote(parsed.path)))  # no link followed
        if not path.is_relative_to(self.root) or path == self.root:
            raise BrowserError(f"no document `{url}` under {self.root}")
        return path

    def open(self, url: str) -> Page:
        path = self._path(url.removeprefix(VIEW_SOURCE))
        text = self._read(path)
        if text is None:
            raise BrowserError(f"no document `{url}` under {self.root}")
        if url.startswith(VIEW_SOURCE) or path.suffix.lower() not in (".html", ".htm"):
            return page_from_text(text, path.as_uri(), path.name)
        return page_from_html(text, path.as_uri())

    def close(self) -> None:
        """Nothing to close: files are read as they are opened."""


def _is_regular(path: Path) -> bool:
    """A regular file itself, not a link to one (``Path.is_file`` follows links)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
