"""The one interface between the agent loop and a model: a Harmony prompt in, pieces out.

A backend turns a rendered Harmony prompt (text with special-token markers) into a stream
of :class:`Piece` values. Special tokens arrive as their markers with ``special=True``, never
as plain text. The stream's last piece is the stop token (``<|return|>`` or ``<|call|>``) when
the model stopped on one; servers that hide it have it put back by their backend.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Self

__all__ = [
    "Backend",
    "BackendConfig",
    "FunctionSpec",
    "Generation",
    "Piece",
    "SamplingSettings",
    "StopReason",
    "StreamGeneration",
]


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece of model output: text, or a Harmony special token marker."""

    text: str
    special: bool = False


class StopReason(StrEnum):
    """Why a generation ended."""

    RETURN = "return"  # <|return|>: the turn is over
    CALL = "call"  # <|call|>: a tool should run
    MAX_TOKENS = "max_tokens"
    CANCELLED = "cancelled"
    CONTEXT_FULL = "context_full"
    END_OF_STREAM = "end_of_stream"  # the model or server stopped without a stop token


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One tool as a chat-style server takes it: a name, what it does, its arguments' schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    #: The Harmony recipient when it is not ``functions.NAME`` (``browser.search``).
    recipient: str | None = None


@dataclass(slots=True)
class SamplingSettings:
    """Sampling knobs; gpt-oss's recommended defaults are temperature 1.0 and top_p 1.0."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    #: JSON Schema of each function's arguments, by recipient (``functions.shell``). The
    #: in-process model samples a call's arguments under a grammar made from it once the
    #: call's header ends in ``<|constrain|>json<|message|>`` (or `` json``).
    argument_schemas: Mapping[str, Mapping[str, Any]] | None = None
    #: The tools as JSON-Schema functions, for servers that apply their own chat template
    #: (Chat Completions, the Responses API, Ollama's /api/chat).
    functions: Sequence[FunctionSpec] | None = None


@dataclass(slots=True)
class BackendConfig:
    """How to reach a model; :func:`lmc.backends.open_backend` picks the implementation.

    ``api_base`` set: an OpenAI-compatible server. Otherwise llama.cpp in-process on
    ``model`` (a GGUF path, ``hf:REPO[:FILE]``, or None for the default gpt-oss-20b), and with
    ``replay`` set, that model forced through its own sampler to emit a recorded transcript.
    """

    model: str | None = None
    api_base: str | None = None
    replay: str | None = None
    #: None: the model's trained context, capped by what its KV cache fits in free memory.
    context_size: int | None = None
    gpu_layers: int | None = None  # None: all layers when the build has a GPU
    threads: int | None = None
    seed: int | None = None
    api_key: str | None = None
    #: How to talk to ``api_base``: "auto", "completions" (raw Harmony), "chat",
    #: "responses" or "ollama" (Ollama's /api/chat); see :mod:`lmc.backends.detect`.
    api_style: str = "auto"
    #: The variable the API key is read from (after LMC_API_KEY) when ``api_key`` is unset.
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 600.0
    prefix_cache: bool = True  # persist the system/developer prefix state on disk
    verbose: bool = False


class Generation(ABC):
    """An iterator of pieces; ``stop_reason`` and the counters are set once it is exhausted."""

    stop_reason: StopReason | None = None
    #: Prompt tokens actually evaluated by the model for this call (cache hits excluded).
    prompt_tokens_evaluated: int = 0
    #: Total prompt tokens of this call.
    prompt_tokens: int = 0
    #: Tokens generated in this call.
    completion_tokens: int = 0
    #: Of those, reasoning tokens, where the server says (0: not told).
    reasoning_tokens: int = 0
    #: Model calls it took: 0 for a tool call the server made earlier, in the same answer.
    model_calls: int = 1

    @abstractmethod
    def __iter__(self) -> Iterator[Piece]: ...


class StreamGeneration(Generation):
    """A generation whose pieces come from ``run``, an iterator the backend sets; iterate once.

    The backend's generator fills in ``stop_reason`` and the counters as it goes.
    """

    def __init__(self, prompt_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.run: Iterator[Piece] = iter(())

    def __iter__(self) -> Iterator[Piece]:
        return self.run


class Backend(ABC):
    """A model that completes Harmony prompts."""

    #: The model's context window in tokens.
    context_size: int
    #: Why it has that size, in one line (shown by ``lmc doctor``, ``--verbose``, ``%tokens``).
    context_reason: str = ""
    #: The server cuts an over-long prompt without a word (Ollama): a count far below the
    #: estimate is said (:mod:`lmc.agent.served_retry`).
    cuts_silently: bool = False
    #: How it talks to its model ("in-process", "completions", "chat", ...), and why.
    dialect: str = "in-process"
    dialect_reason: str = ""

    @abstractmethod
    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        """Start completing ``prompt``; setting ``cancel`` stops within a token."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` (with special-token markers) takes in this model."""

    def token_lengths(self, text: str) -> list[int] | None:
        """Each token's decoded length in ``text`` read as plain text (markers not parsed,
        where the tokenizer allows; a token holding part of a character decodes to one
        replacement character), or None where the model is not tokenized here. The browser
        ends its views with it as OpenAI's reference does (:mod:`lmc.browser.paging`)."""
        del text
        return None

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free the model's resources."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
