"""gpt-oss's own browser tool (``browser.search``, ``browser.open``, ``browser.find``).

:mod:`lmc.browser.page` shows pages as the model was trained to read them,
:mod:`lmc.browser.session` keeps the stack of pages and answers the calls, the backends
(:mod:`~lmc.browser.searxng`, :mod:`~lmc.browser.exa`, :mod:`~lmc.browser.local_files`)
search and fetch, and :mod:`lmc.browser.tools` offers it all to the agent. Pages are fetched
by lmc itself, outside the code sandbox, and only after the person confirms the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmc.errors import ConfigError

if TYPE_CHECKING:
    from lmc.browser.backends import SearchBackend

__all__ = ["make_backend"]


def _require_extra() -> None:
    import importlib.util

    if not all(importlib.util.find_spec(name) for name in ("html2text", "lxml")):
        from lmc.extras import install_hint

        raise ConfigError(f"the browser needs its extra: {install_hint('browser')}")


def make_backend(
    name: str, url: str | None = None, *, allow_private: bool = False
) -> SearchBackend:
    """The backend ``--browser NAME --browser-url URL`` asks for; ConfigError when unusable."""
    from lmc.browser.backends import BACKENDS

    _require_extra()
    if name == "searxng":
        if not url:
            raise ConfigError(
                "--browser searxng needs --browser-url: the address of a SearXNG instance "
                "(for example http://127.0.0.1:8888)"
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--browser-url must be an http(s) URL, not {url!r}")
        from lmc.browser.searxng import SearxngBackend

        return SearxngBackend(url, allow_private=allow_private)
    if name == "exa":
        from lmc.browser.exa import ExaBackend

        return ExaBackend(url)
    if name == "local":
        if not url:
            raise ConfigError("--browser local needs --browser-url: the folder of documents")
        from lmc.browser.local_files import LocalFilesBackend

        return LocalFilesBackend(url)
    raise ConfigError(f"--browser must be one of {', '.join(BACKENDS)}, not {name!r}")
