"""lmc's one exception hierarchy.

Every error lmc raises on purpose is an ``LmcError``; anything else escaping is a bug.
Foreign errors (llama.cpp, httpx, jupyter_client, sqlite) are mapped to these at the
boundary that calls them, with ``raise ... from exc``.

    LmcError
    ├── MessageError          an LMC message or chunk is malformed (unknown role/type/format)
    ├── HarmonyError          Harmony text could not be rendered or parsed
    ├── BackendError          the model backend failed
    │   ├── ModelNotFoundError    no model file, or it could not be downloaded
    │   ├── ContextOverflowError  the prompt does not fit the model's context
    │   └── ServerError           an OpenAI-compatible server failed (connection, HTTP, SSE)
    │       ├── ServedContextOverflow  the server refused a prompt longer than its context
    │       └── StreamDroppedError     the server closed the stream before the answer ended
    ├── ComputerError         a kernel could not be started or driven
    ├── ConfigError           bad configuration (file, profile, environment, flag)
    │   └── SandboxUnavailableError  a sandbox was asked for and no working tool is here
    ├── InputError            what the person gave cannot be read (standard input not UTF-8)
    ├── StorageError          the conversation database failed
    ├── WorkspaceError        a checkpoint of the working directory could not be taken or restored
    ├── VoiceError            speech could not be heard (not WAV, no speech, the STT failed)
    │   └── SpeechModelNotFoundError  no speech-to-text model, or it could not be downloaded
    └── BrowserError          the browser tool could not search or open a page
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BrowserError",
    "ComputerError",
    "ConfigError",
    "ContextOverflowError",
    "HarmonyError",
    "InputError",
    "InterpreterClosedError",
    "LmcError",
    "MessageError",
    "MissingExtraError",
    "ModelNotFoundError",
    "SandboxUnavailableError",
    "ServedContextOverflow",
    "ServerError",
    "SpeechModelNotFoundError",
    "StorageError",
    "StreamDroppedError",
    "VoiceError",
    "WorkspaceError",
]


class LmcError(Exception):
    """Base of every error lmc raises on purpose. ``str(err)`` is one line for the person."""

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class InterpreterClosedError(LmcError):
    """The Interpreter was closed (a turn running then ends quietly)."""


class MissingExtraError(LmcError):
    """An optional part of lmc (``pip install "lmc-agent[NAME]"``) is used but not installed."""


class MessageError(LmcError, ValueError):
    """An LMC message or chunk is malformed."""


class HarmonyError(LmcError, ValueError):
    """Harmony text could not be rendered or parsed."""


class BackendError(LmcError):
    """The model backend failed."""


class ModelNotFoundError(BackendError):
    """No model file was found, or it could not be downloaded."""


class ContextOverflowError(BackendError):
    """The prompt does not fit the model's context window."""

    def __init__(self, prompt_tokens: int, context_size: int, *, hint: str | None = None) -> None:
        self.prompt_tokens = prompt_tokens
        self.context_size = context_size
        super().__init__(
            f"the prompt is {prompt_tokens} tokens but the model's context holds {context_size}",
            hint=hint,
        )


class ServerError(BackendError):
    """An OpenAI-compatible HTTP server could not be reached or answered badly."""


class ServedContextOverflow(ServerError, ContextOverflowError):
    """The server answered that the prompt does not fit its context (HTTP 400 and the like).

    ``context_size`` is the context the server named (0: it named none), ``prompt_tokens``
    the prompt's size as it counted it (0: not said).
    """

    def __init__(
        self,
        message: str,
        *,
        prompt_tokens: int = 0,
        context_size: int = 0,
        hint: str | None = None,
    ) -> None:
        self.prompt_tokens = prompt_tokens
        self.context_size = context_size
        LmcError.__init__(self, message, hint=hint)


class StreamDroppedError(ServerError):
    """The server (or a proxy) closed the stream before the answer ended."""


class ComputerError(LmcError):
    """A kernel could not be started or driven."""


class ConfigError(LmcError):
    """The configuration (file, profile, environment or flag) is invalid."""


class InputError(LmcError):
    """What the person gave (standard input, an argument) cannot be read as text."""


class StorageError(LmcError):
    """The conversation database could not be read or written."""


class WorkspaceError(LmcError):
    """A snapshot of the working directory could not be taken, compared or restored."""


class SandboxUnavailableError(ConfigError):
    """A sandbox was asked for explicitly, and this machine has no working sandbox tool."""


class VoiceError(LmcError):
    """Audio could not be turned into text: not WAV, empty, no speech, or the model failed."""


class SpeechModelNotFoundError(VoiceError):
    """No speech-to-text model was found, or it could not be downloaded."""


class BrowserError(LmcError):
    """The browser tool could not search or fetch a page; ``str()`` is what the model is told."""
