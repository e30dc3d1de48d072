"""What the transports for templating servers share: the client, the context, call ids.

A subclass says where to post (``url``), how the conversation goes out (``body``) and how
the answer streams back (``stream``, yielding Harmony pieces through a
:class:`~lmc.backends._dialogue.HarmonyWriter`); this base runs the request, maps every
failure to one line and keeps the server's call ids so results go back under them.
"""

from __future__ import annotations

import math
import threading
from abc import abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lmc.backends._dialogue import Prompt, read_prompt
from lmc.backends._http import checked_url, key_source, make_client, server_errors
from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StreamGeneration,
)
from lmc.backends.openai_server import server_context
from lmc.errors import ServerError

if TYPE_CHECKING:
    import httpx

__all__ = ["ChatLikeBackend"]


class ChatLikeBackend(Backend):
    """A server that takes a conversation (not a prompt) and applies its own template."""

    def __init__(self, config: BackendConfig) -> None:
        if not config.api_base:
            raise ServerError("no server address (api_base) was given")
        self.config = config
        self.url = checked_url(self.endpoint(config.api_base), config.api_base)
        self.context_size, self.context_reason = server_context(config)
        key, self._key_from = key_source(config)
        self._timeout = config.timeout
        self._client = make_client(config, key)
        #: (function, arguments) of calls the server made -> the id it gave them.
        self.call_ids: dict[tuple[str, str], str] = {}
        self.recipients: dict[str, str | None] = {}

    @abstractmethod
    def endpoint(self, api_base: str) -> str:
        """The URL answers are requested from."""

    @abstractmethod
    def body(self, prompt: Prompt, settings: SamplingSettings) -> dict[str, Any]:
        """The request for ``prompt`` in this dialect."""

    @abstractmethod
    def stream(
        self, response: httpx.Response, generation: Generation, cancel: threading.Event | None
    ) -> Iterator[Piece]:
        """The answer as Harmony pieces; sets ``generation.stop_reason`` and the counters."""

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        settings = settings or SamplingSettings()
        #: Functions of built-in namespaces -> their Harmony recipients (browser.search).
        self.recipients = {f.name: f.recipient for f in settings.functions or () if f.recipient}
        body = self.body(read_prompt(prompt, self.call_ids), settings)
        generation = StreamGeneration(0)
        generation.run = self._run(generation, body, cancel)
        return generation

    def _run(
        self, generation: Generation, body: dict[str, Any], cancel: threading.Event | None
    ) -> Iterator[Piece]:
        with (
            server_errors(self.url, self._timeout, self._key_from),
            self._client.stream("POST", self.url, json=body) as response,
        ):
            if response.status_code >= 400:
                response.read()  # the error message is in the body
                response.raise_for_status()
            yield from self.stream(response, generation, cancel)

    def seed(self, settings: SamplingSettings) -> int | None:
        return settings.seed if settings.seed is not None else self.config.seed

    def count_tokens(self, text: str) -> int:
        """An estimate (about 4 bytes a token for o200k): servers tokenize differently."""
        return math.ceil(len(text.encode("utf-8")) / 4)

    def close(self) -> None:
        self._client.close()
