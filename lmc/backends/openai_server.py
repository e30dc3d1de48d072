"""Any OpenAI-compatible server (vLLM, llama.cpp's server, ...) through ``/v1/completions``.

The raw Harmony prompt goes out as a completion request streamed back as server-sent
events, asking the server to keep special tokens in the text (vLLM's
``skip_special_tokens: false``); the markers in the text become special pieces again.

Servers hide the token they stopped on. The backend puts it back: a message whose header
names a recipient (a tool call) ended in ``<|call|>``, any other in ``<|return|>``. The
header is read by :class:`lmc.harmony.parser.StreamParser`, seeded with the end of the
prompt so a header the prompt already opened counts too.

A server that applies its own chat template (Ollama, LM Studio) sends the model's text
without Harmony's markers: right after ``<|start|>assistant`` the model always writes a
marker, so plain text there means the markers were dropped, and the stream stops with one
line saying so rather than passing the text off as a final answer.

Every foreign error (httpx, JSON, a server's error answer) becomes a
:class:`lmc.errors.ServerError` in :func:`lmc.backends._http.server_errors`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from lmc.backends._http import (
    ServerAnswer,
    StreamCut,
    checked_url,
    key_source,
    make_client,
    server_errors,
    sse_data,
)
from lmc.backends._pieces import MarkerSplitter
from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StopReason,
    StreamGeneration,
)
from lmc.backends.served import Calibration
from lmc.errors import ServerError
from lmc.harmony import tokens
from lmc.harmony.events import MessageEnded, MessageStarted

__all__ = [
    "SERVER_CONTEXT",
    "MarkersDropped",
    "OpenAIServerBackend",
    "count_usage",
    "server_context",
]

#: The context assumed for a server until it is read from the server itself
#: (:func:`lmc.backends.server.apply_served`): gpt-oss's trained context.
SERVER_CONTEXT = 131_072


class MarkersDropped(ServerError):
    """The server sent the model's text without Harmony's special tokens."""


def server_context(config: BackendConfig) -> tuple[int, str]:
    """(context size, why) for a model behind a server."""
    if config.context_size is None:
        return SERVER_CONTEXT, (
            f"{SERVER_CONTEXT:,} tokens: gpt-oss's trained context, assumed for the server "
            "(--context sets what it really serves)"
        )
    return config.context_size, f"{config.context_size:,} tokens: as set"


def _completions_url(api_base: str) -> str:
    base = api_base.rstrip("/")
    return f"{base}/completions" if base.endswith("/v1") else f"{base}/v1/completions"


class OpenAIServerBackend(Backend):
    """gpt-oss behind an OpenAI-compatible ``/v1/completions`` endpoint."""

    #: The dialect, as ``lmc doctor`` and ``--verbose`` name it.
    dialect = "completions"
    #: Stop with one line when the text after ``<|start|>assistant`` has no marker (set when
    #: the raw dialect was forced: auto detection checked the server already).
    check_markers = False

    def __init__(self, config: BackendConfig) -> None:
        if not config.api_base:
            raise ServerError("no server address (api_base) was given")
        self.config = config
        self.url = checked_url(_completions_url(config.api_base), config.api_base)
        self.context_size, self.context_reason = server_context(config)
        key, self._key_from = key_source(config)
        self._timeout = config.timeout
        self._client = make_client(config, key)
        #: lmc's token estimate, corrected by the server's counts.
        self.calibration = Calibration()

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        settings = settings or SamplingSettings()
        body: dict[str, Any] = {
            "prompt": prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": settings.max_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if self.config.model:
            body["model"] = self.config.model
        seed = settings.seed if settings.seed is not None else self.config.seed
        if seed is not None:
            body["seed"] = seed
        generation = StreamGeneration(0)
        generation.run = self._run(generation, prompt, body, cancel)
        return generation

    def count_tokens(self, text: str) -> int:
        """An estimate (about 4 bytes a token for o200k, corrected by the server's counts):
        servers tokenize differently."""
        return self.calibration.count(text)

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------------------ stream

    def _run(
        self,
        generation: Generation,
        prompt: str,
        body: dict[str, Any],
        cancel: threading.Event | None,
    ) -> Iterator[Piece]:
        run = _CompletionRun(generation, prompt, self.url, check_markers=self.check_markers)
        with (
            server_errors(self.url, self._timeout, self._key_from),
            self._client.stream("POST", self.url, json=body) as response,
        ):
            if response.status_code >= 400:
                response.read()  # the error message is in the body
                response.raise_for_status()
            yield from run.consume(sse_data(response), cancel)
        yield from run.finish()
        self.calibration.observe(Calibration.raw(prompt), generation.prompt_tokens)


class _CompletionRun:
    """One streamed completion: the server's events in, Harmony pieces out, and why it ended."""

    def __init__(self, generation: Generation, prompt: str, url: str, *, check_markers: bool):
        self.generation = generation
        self.url = url
        self.header = _HeaderWatch(prompt)
        self.splitter = MarkerSplitter()
        self.reason: StopReason | None = None
        self.finish_reason: str | None = None
        # Right after <|start|>assistant the model writes a marker; text there was stripped.
        self.expect_marker = check_markers and prompt.endswith(tokens.START + "assistant")

    def consume(self, events: Iterable[str], cancel: threading.Event | None) -> Iterator[Piece]:
        """The pieces of the server's events, until a stop token, ``[DONE]`` or a cancel."""
        seen = 0
        for data in events:
            if cancel is not None and cancel.is_set():
                self.reason = StopReason.CANCELLED
                return
            seen += 1
            if data == "[DONE]":
                return
            yield from self._event(json.loads(data))
            if self.reason is not None:
                return
        if seen == 0:
            raise ServerAnswer("closed the stream without sending any event")
        if self.finish_reason is None:
            raise StreamCut("closed the stream before the answer ended (no finish, no [DONE])")

    def _event(self, event: Any) -> Iterator[Piece]:
        text, event_finish, usage = _completion_event(event)
        # A usage-only chunk after the last choice carries no finish reason: keep it.
        self.finish_reason = event_finish or self.finish_reason
        if usage:
            count_usage(self.generation, usage)
        for piece in self.splitter.feed(text):
            self._check_marker(piece)
            self.header.see(piece)
            if piece.special and piece.text in tokens.STOP_TOKENS:
                self.reason = StopReason.CALL if piece.text == tokens.CALL else StopReason.RETURN
            if not piece.special and not usage:
                self.generation.completion_tokens += 1
            yield piece
            if self.reason is not None:
                return

    def _check_marker(self, piece: Piece) -> None:
        """The first thing the model writes must be a marker: plain text means the server
        stripped the special tokens."""
        if self.expect_marker and (piece.special or piece.text.strip()):
            self.expect_marker = False
            if not piece.special:
                raise MarkersDropped(_dropped(self.url, piece.text))

    def finish(self) -> Iterator[Piece]:
        """What the splitter held back, and the stop marker a ``stop`` finish stripped."""
        if self.reason is None:
            yield from self.splitter.flush()
            if self.finish_reason == "length":
                self.reason = StopReason.MAX_TOKENS
            elif self.finish_reason == "stop":
                calling = bool(self.header.recipient)
                yield Piece(tokens.CALL if calling else tokens.RETURN, special=True)
                self.reason = StopReason.CALL if calling else StopReason.RETURN
            else:
                self.reason = StopReason.END_OF_STREAM
        self.generation.stop_reason = self.reason


def _dropped(url: str, text: str) -> str:
    return (
        f"{url} sent the model's text without Harmony's special tokens "
        f"(it began {text.strip()[:30]!r}, not <|channel|>): the server applies its own chat "
        "template; use --api-style chat (or auto)"
    )


def count_usage(generation: Generation, usage: dict[str, Any]) -> None:
    """Token counts from an OpenAI ``usage`` object."""
    generation.prompt_tokens = int(usage.get("prompt_tokens") or 0)
    generation.prompt_tokens_evaluated = generation.prompt_tokens
    if usage.get("completion_tokens") is not None:
        generation.completion_tokens = int(usage["completion_tokens"] or 0)
    details = usage.get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        generation.reasoning_tokens = int(details["reasoning_tokens"] or 0)


class _HeaderWatch:
    """The recipient of the message being generated, read by the Harmony stream parser."""

    def __init__(self, prompt: str) -> None:
        from lmc.harmony.parser import StreamParser

        start = prompt.rfind(tokens.START)
        self.recipient: str | None = None
        if start < 0:
            self._parser = StreamParser(role="assistant")
        else:
            self._parser = StreamParser(role=None)
            self._handle(self._parser.feed_text(prompt[start:]))

    def see(self, piece: Piece) -> None:
        self._handle(self._parser.feed(piece.text, special=piece.special))

    def _handle(self, events: list[Any]) -> None:
        for event in events:
            if isinstance(event, MessageStarted):
                self.recipient = event.header.recipient
            elif isinstance(event, MessageEnded):
                self.recipient = None


def _completion_event(event: Any) -> tuple[str, str | None, dict[str, Any] | None]:
    """(text, finish_reason, usage) of one completion chunk; errors and junk raise."""
    if not isinstance(event, dict):
        raise ServerAnswer(f"sent an event that is not an object: {json.dumps(event)[:80]}")
    if "error" in event:
        error = event["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerAnswer(f"reported an error: {str(message)[:300]}")
    choices = event.get("choices")
    usage = event.get("usage") if isinstance(event.get("usage"), dict) else None
    if choices == [] and usage is not None:
        return "", None, usage
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ServerAnswer(f"sent an event without choices: {json.dumps(event)[:80]}")
    choice = choices[0]
    text = choice.get("text", "")
    if not isinstance(text, str):
        raise ServerAnswer(f"sent a choice whose text is not a string: {json.dumps(choice)[:80]}")
    finish = choice.get("finish_reason")
    return text, finish if isinstance(finish, str) else None, usage
