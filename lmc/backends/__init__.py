"""Model backends: one small interface, one transport per dialect.

:func:`open_backend` picks one from a :class:`BackendConfig`: a server when ``api_base`` is
set (or the model is ``ollama:NAME``/``lmstudio:NAME``), in the dialect
:mod:`lmc.backends.detect` finds (raw completions, Chat Completions, the Responses API,
Ollama's /api/chat); otherwise llama.cpp in-process (replaying a recorded transcript when
``replay`` is set). Importing this package imports neither llama.cpp nor httpx.
"""

from __future__ import annotations

from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StopReason,
)

__all__ = [
    "Backend",
    "BackendConfig",
    "Generation",
    "Piece",
    "SamplingSettings",
    "StopReason",
    "is_server_shortcut",
    "open_backend",
]


def is_server_shortcut(model: str | None) -> bool:
    """Whether ``model`` names a server's model (``ollama:NAME``, ``lmstudio:NAME``)."""
    return bool(model) and str(model).split(":", 1)[0] in ("ollama", "lmstudio")


def open_backend(config: BackendConfig) -> Backend:
    """The backend ``config`` describes, ready to generate.

    Raises :class:`lmc.errors.ModelNotFoundError` when no model can be found or downloaded,
    :class:`lmc.errors.ConfigError` for an unreadable replay file, and
    :class:`lmc.errors.BackendError` when llama.cpp cannot load the model.
    """
    if config.api_base or is_server_shortcut(config.model):
        if config.replay:
            from lmc.errors import ConfigError

            raise ConfigError("--replay needs the in-process model; it cannot go with --api-base")
        from lmc.backends.server import open_server_backend

        return open_server_backend(config)
    from lmc.backends.llama import LlamaCppBackend
    from lmc.backends.replay import ReplayScript
    from lmc.backends.resolve import resolve_model

    replay = ReplayScript.from_file(config.replay) if config.replay else None
    return LlamaCppBackend(resolve_model(config.model), config, replay=replay)
