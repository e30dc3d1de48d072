"""Optional parts of lmc (``pip install "lmc-agent[NAME]"``): a clear line when one is missing.

``server`` (lmc serve), ``voice`` (speech input) and ``mcp`` (MCP servers, ``lmc mcp``) pull
in heavy dependencies that a plain ``lmc run`` does not need, so they are extras; the code
that needs one asks :func:`require` first instead of failing on an ImportError deep inside.

The distribution is ``lmc-agent`` (the command is ``lmc``): ``lmc`` on PyPI is an unrelated
project, which ``pip install "lmc[server]"`` would put in instead. Every hint comes from
:func:`install_hint`: the pip of the Python lmc runs in, with the clone lmc was installed from
(``pip install .``, the README's way) or, for an install from PyPI, the distribution's name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Final

from lmc.errors import MissingExtraError

__all__ = ["DISTRIBUTION", "EXTRAS", "install_hint", "require", "source_of"]

#: lmc's name on PyPI.
DISTRIBUTION: Final = "lmc-agent"

#: extra -> (the module that shows it is installed, what it is for)
EXTRAS: Final = {
    "mcp": ("mcp", "MCP servers"),
    "server": ("uvicorn", "lmc serve"),
    "voice": ("faster_whisper", "speech input"),
}


def require(extra: str) -> None:
    """Raise :class:`MissingExtraError` (with the pip command) when ``extra`` is missing."""
    module, purpose = EXTRAS[extra]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken one
        found = False
    if not found:
        raise MissingExtraError(
            f"{purpose} need the {extra} extra, which is not installed ({module} is missing)",
            hint=install_hint(extra),
        )


def source_of(direct_url: str | None) -> str | None:
    """The folder lmc was installed from, read from its ``direct_url.json`` (PEP 610): a
    local directory (``pip install .`` or ``-e .``); None for PyPI or an archive."""
    import json
    from urllib.parse import unquote, urlparse

    try:
        data = json.loads(direct_url or "null")
    except ValueError:
        return None
    if not isinstance(data, dict) or "dir_info" not in data:
        return None
    url = urlparse(str(data.get("url", "")))
    return unquote(url.path) if url.scheme == "file" and url.path else None


def _installed_from() -> str | None:
    import importlib.metadata  # only when a hint is shown: it costs lmc's start otherwise

    try:
        direct_url = importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:  # not installed: run from a checkout?
        checkout = Path(__file__).resolve().parents[1]
        return str(checkout) if (checkout / "pyproject.toml").is_file() else None
    return source_of(direct_url)


def install_hint(extra: str) -> str:
    """The command that adds ``extra`` to the environment lmc runs in."""
    return f'{sys.executable} -m pip install "{_installed_from() or DISTRIBUTION}[{extra}]"'
