"""The transport for a server, in the dialect :mod:`lmc.backends.detect` finds."""

from __future__ import annotations

from lmc.backends.base import Backend, BackendConfig
from lmc.backends.detect import detect

__all__ = ["open_server_backend"]


def open_server_backend(config: BackendConfig) -> Backend:
    """The transport for the dialect :func:`detect` finds."""
    found = detect(config)
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
    from lmc.backends.served import apply_served

    apply_served(backend, found.config)
    return backend
