"""What ``lmc doctor`` says of the browser: the backend, and whether it answers a search."""

from __future__ import annotations

from lmc.errors import LmcError

__all__ = ["browser_lines"]


def browser_lines(
    backend: str | None, url: str | None, allow_private: bool
) -> list[tuple[str, bool, str]]:
    """(name, good, detail) rows: off, or the backend and the answer to one test search."""
    if backend is None:
        return [("browser", True, "off (--browser searxng|exa|local to turn it on)")]
    from lmc.browser import make_backend

    try:
        made = make_backend(backend, url, allow_private=allow_private)
    except LmcError as exc:
        return [("browser", False, str(exc))]
    where = f"{backend} at {url}" if url else backend
    try:
        page = made.search("lmc doctor", 3)
    except LmcError as exc:
        return [("browser", False, f"{where}: {exc}")]
    finally:
        made.close()
    count = len(page.urls)
    return [("browser", True, f"{where} answers ({count} result{'s' if count != 1 else ''})")]
