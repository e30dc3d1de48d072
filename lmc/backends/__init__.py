"""Model backends: one small interface, three real implementations.

:func:`open_backend` picks one from a :class:`BackendConfig`: an OpenAI-compatible server
when ``api_base`` is set, otherwise llama.cpp in-process (replaying a recorded transcript
when ``replay`` is set). Importing this package imports neither llama.cpp nor httpx.
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
    "open_backend",
]


def open_backend(config: BackendConfig) -> Backend:
    """The backend ``config`` describes, ready to generate.

    Raises :class:`lmc.errors.ModelNotFoundError` when no model can be found or downloaded,
    :class:`lmc.errors.ConfigError` for an unreadable replay file, and
    :class:`lmc.errors.BackendError` when llama.cpp cannot load the model.
    """
    if config.api_base:
        if config.replay:
            from lmc.errors import ConfigError

            raise ConfigError("--replay needs the in-process model; it cannot go with --api-base")
        from lmc.backends.openai_server import OpenAIServerBackend

        return OpenAIServerBackend(config)
    from lmc.backends.llama import LlamaCppBackend
    from lmc.backends.replay import ReplayScript
    from lmc.backends.resolve import resolve_model

    replay = ReplayScript.from_file(config.replay) if config.replay else None
    return LlamaCppBackend(resolve_model(config.model), config, replay=replay)
