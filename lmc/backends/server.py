"""The transport for a server, in the dialect :mod:`lmc.backends.detect` finds, working
against the context the server serves (:mod:`lmc.backends.served`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmc.backends.base import Backend, BackendConfig
from lmc.backends.detect import detect
from lmc.errors import LmcError

if TYPE_CHECKING:
    from collections.abc import Callable

    from lmc.backends.served import Served, ServedAnswers

__all__ = ["apply_served", "open_server_backend"]


def open_server_backend(config: BackendConfig) -> Backend:
    """The transport for the dialect :func:`detect` finds; the server's context is read
    meanwhile (:class:`~lmc.backends.served.ServedAnswers`), not after it."""
    answers = _read_early(config)
    try:
        found = detect(config, known=None if answers is None else answers.value)
    except BaseException:
        if answers is not None:
            answers.close()
        raise
    backend: Backend
    if found.dialect == "completions":
        from lmc.backends.openai_server import OpenAIServerBackend

        raw = OpenAIServerBackend(found.config)
        # Every answer is checked for the markers unless the probe saw them come back.
        raw.check_markers = not found.markers_checked
        backend = raw
    elif found.dialect == "chat":
        from lmc.backends.chat import ChatBackend

        backend = ChatBackend(found.config)
    elif found.dialect == "responses":
        from lmc.backends.responses import ResponsesBackend

        backend = ResponsesBackend(found.config)
    else:
        from lmc.backends.ollama import OllamaBackend

        backend = OllamaBackend(found.config)
    backend.dialect_reason = found.reason
    if answers is not None and found.config.api_base != config.api_base:
        answers.close()  # a shortcut's address: the early reading went elsewhere
        answers = None
    try:
        apply_served(backend, found.config, answers)
    finally:
        if answers is not None:
            answers.close()  # already, unless the reading was skipped
    return backend


def _read_early(config: BackendConfig) -> ServedAnswers | None:
    """The served context's GETs, sent before the dialect is known, or taken from those
    sent ahead (:func:`lmc.backends.served.read_ahead`); Ollama's native dialect needs none
    of them."""
    from lmc.backends.served import ServedAnswers, take_ahead

    ahead = take_ahead(config)  # sent while lmc loaded (``lmc run``), if for this server
    if not config.api_base or (config.api_style or "").lower() == "ollama":
        if ahead is not None:
            ahead.close()
        return None
    return ahead or ServedAnswers(config)


def apply_served(
    backend: Backend,
    config: BackendConfig,
    answers: ServedAnswers | None = None,
    memory: Callable[[str], int | None] | None = None,
) -> Served | None:
    """Set ``backend.context_size`` to what the server serves (``--context`` wins); the
    reading, or None when the server could not be read. ``memory``: the serving machine's
    free bytes (None: :func:`lmc.backends.served_memory.serving_memory` reads them)."""
    from lmc.backends.served import read_served
    from lmc.backends.served_memory import serving_memory

    try:
        served = read_served(config, backend.dialect, answers, memory or serving_memory)
    except LmcError:
        return None
    backend.cuts_silently = served.source.startswith("Ollama") or served.sized_by_lmc
    if config.context_size is None:
        backend.context_size, backend.context_reason = served.size, served.reason
    elif backend.cuts_silently and not served.sized_by_lmc and served.size < config.context_size:
        # Ollama's /v1 cuts a longer prompt in silence: the person's size cannot hold there.
        backend.context_size = served.size
        backend.context_reason = (
            f"{served.reason}: --context {config.context_size:,} is more than Ollama serves "
            "here, and it cuts a longer prompt without a word"
        )
    if served.sized_by_lmc and backend.dialect == "ollama":
        from lmc.backends.ollama import OllamaBackend
        from lmc.backends.served import NumCtx

        if isinstance(backend, OllamaBackend):
            backend.num_ctx = NumCtx(backend.context_size)
    return served
