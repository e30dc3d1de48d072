"""What the transports for templating servers share: the client, the context, call ids,
and the calls a server made at once.

A subclass says where to post (``url``), how the conversation goes out (``body``) and how
the answer streams back (``stream``, yielding Harmony pieces through a
:class:`~lmc.backends._dialogue.HarmonyWriter`); this base runs the request, maps every
failure to one line and keeps the server's call ids so results go back under them.

A server may answer with several tool calls in one message, but Harmony (and so the agent
loop) runs one call a generation. The first call is written at once and the others wait
here: while each next prompt continues the same turn with the result of the call handed out
last, the next call is answered without asking the server; once all have run, the whole
conversation goes back with every call under its id, each followed by its result. A prompt
that does not continue that way (a new message from the person, another conversation)
drops the waiting calls.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmc.backends._dialogue import HarmonyWriter, Prompt, call_key, read_prompt
from lmc.backends._http import checked_url, key_source, make_client, server_errors
from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StopReason,
    StreamGeneration,
)
from lmc.backends.openai_server import server_context
from lmc.backends.served import Calibration
from lmc.errors import ServerError

if TYPE_CHECKING:
    from lmc.backends._http import HttpResponse

__all__ = ["ChatLikeBackend", "ServerCall"]


@dataclass(frozen=True, slots=True)
class ServerCall:
    """One tool call as the server made it: its id (may be empty), function and arguments."""

    call_id: str
    name: str
    arguments: str


def _place(prompt: Prompt) -> tuple[str, int, bool]:
    """Where a prompt stands in its turn: the person's last words, the calls since them, and
    whether it ends with a tool's result."""
    user, calls = "", 0
    for turn in prompt.turns:
        if turn.kind == "user":
            user, calls = turn.text, 0
        elif turn.kind == "call":
            calls += 1
    ends_with_result = bool(prompt.turns) and prompt.turns[-1].kind == "result"
    return user, calls, ends_with_result


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
        #: (function, arguments) of calls the server made -> the ids it gave them, in order
        #: (the same call made twice has two).
        self.call_ids: dict[tuple[str, str], list[str]] = {}
        self.recipients: dict[str, str | None] = {}
        #: Calls the server made in its last answer that have not been handed out yet.
        self.waiting: list[ServerCall] = []
        #: Where the prompt stood when the server was asked, then where the next prompt must
        #: stand for the next waiting call to be its answer.
        self._asked: tuple[str, int, bool] = ("", 0, False)
        self._expected: tuple[str, int, bool] | None = None
        #: lmc's token estimate, corrected by the server's counts.
        self.calibration = Calibration()

    @abstractmethod
    def endpoint(self, api_base: str) -> str:
        """The URL answers are requested from."""

    @abstractmethod
    def body(self, prompt: Prompt, settings: SamplingSettings) -> dict[str, Any]:
        """The request for ``prompt`` in this dialect."""

    @abstractmethod
    def stream(
        self, response: HttpResponse, generation: Generation, cancel: threading.Event | None
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
        read = read_prompt(prompt, self.call_ids)
        place = _place(read)
        if self.waiting and place == self._expected:
            return self._hand_out(place)
        self.waiting, self._expected, self._asked = [], None, place
        body = self.body(read, settings)
        generation = StreamGeneration(0)
        generation.run = self._run(generation, body, cancel, Calibration.raw(prompt))
        return generation

    def write_calls(
        self, writer: HarmonyWriter, calls: Sequence[ServerCall], generation: Generation
    ) -> Iterator[Piece]:
        """The calls of one answer: their ids kept, the first written, the others waiting."""
        for call in calls:
            if call.call_id:
                ids = self.call_ids.setdefault(call_key(call.name, call.arguments or "{}"), [])
                if call.call_id not in ids:
                    ids.append(call.call_id)
        first, *self.waiting = calls
        user, done, _ = self._asked
        self._expected = (user, done + 1, True)
        yield from writer.call(first.name, first.arguments or "{}", self.recipients.get(first.name))
        generation.stop_reason = StopReason.CALL

    def _hand_out(self, place: tuple[str, int, bool]) -> Generation:
        """The next waiting call, as the answer to a prompt that ends with the last one's result."""
        call = self.waiting.pop(0)
        user, done, _ = place
        self._expected = (user, done + 1, True) if self.waiting else None
        generation = StreamGeneration(0)
        generation.model_calls = 0

        def run() -> Iterator[Piece]:
            arguments = call.arguments or "{}"
            yield from HarmonyWriter().call(call.name, arguments, self.recipients.get(call.name))
            generation.stop_reason = StopReason.CALL

        generation.run = run()
        return generation

    def _run(
        self,
        generation: Generation,
        body: dict[str, Any],
        cancel: threading.Event | None,
        estimate: int,
    ) -> Iterator[Piece]:
        with (
            server_errors(self.url, self._timeout, self._key_from),
            self._client.stream("POST", self.url, json=body) as response,
        ):
            if response.status_code >= 400:
                response.read()  # the error message is in the body
                response.raise_for_status()
            yield from self.stream(response, generation, cancel)
        self.calibration.observe(estimate, generation.prompt_tokens)

    def seed(self, settings: SamplingSettings) -> int | None:
        return settings.seed if settings.seed is not None else self.config.seed

    def count_tokens(self, text: str) -> int:
        """An estimate (about 4 bytes a token for o200k, corrected by the server's counts):
        servers tokenize differently."""
        return self.calibration.count(text)

    def close(self) -> None:
        self._client.close()
