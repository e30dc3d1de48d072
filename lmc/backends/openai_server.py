"""Any OpenAI-compatible server (vLLM, llama.cpp's server, ...) through ``/v1/completions``.

The raw Harmony prompt goes out as a completion request streamed back as server-sent
events, asking the server to keep special tokens in the text (vLLM's
``skip_special_tokens: false``); the markers in the text become special pieces again.

Servers hide the token they stopped on. The backend puts it back: a message whose header
names a recipient (a tool call) ended in ``<|call|>``, any other in ``<|return|>``. The
header is read by :class:`lmc.harmony.parser.StreamParser`, seeded with the end of the
prompt so a header the prompt already opened counts too.

Every foreign error (httpx, JSON, a server's error answer) becomes a
:class:`lmc.errors.ServerError` in :func:`_server_errors`, the one place that maps them.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

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
from lmc.errors import ConfigError, ServerError
from lmc.harmony import tokens
from lmc.harmony.events import MessageEnded, MessageStarted

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIServerBackend"]

_CONNECT_TIMEOUT = 10.0
#: The context assumed for a server when none is given: gpt-oss's trained context.
SERVER_CONTEXT = 131_072


class _ServerAnswer(Exception):
    """Raised inside the mapping block for an answer that is not what the API promises."""


@contextmanager
def _server_errors(url: str, timeout: float) -> Iterator[None]:
    """The one place where httpx, JSON and protocol errors become ServerError."""
    import httpx

    try:
        yield
    except httpx.ConnectError as exc:
        raise ServerError(
            f"cannot connect to {url}: {_reason(exc) or 'connection refused'}",
            hint="Is the server running, and is --api-base its address (e.g. http://host:8000/v1)?",
        ) from exc
    except httpx.TimeoutException as exc:
        raise ServerError(f"{url} did not answer within {timeout:g} s") from exc
    except httpx.HTTPStatusError as exc:
        raise ServerError(
            f"{url} answered HTTP {exc.response.status_code}: {_error_text(exc.response)}"
        ) from exc
    except httpx.HTTPError as exc:
        raise ServerError(f"the connection to {url} failed: {_reason(exc)}") from exc
    except json.JSONDecodeError as exc:
        raise ServerError(f"{url} sent a malformed event (not JSON): {exc.doc[:80]!r}") from exc
    except _ServerAnswer as exc:
        raise ServerError(f"{url} {exc}") from exc


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _error_text(response: httpx.Response) -> str:
    """An error answer's message on one line (a heading line ending in ':' keeps the next)."""
    lines = [line.strip() for line in _error_body(response).splitlines() if line.strip()]
    if not lines:
        return response.reason_phrase
    text = " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]
    return text[:300]


def _error_body(response: httpx.Response) -> str:
    """The message of an error answer: OpenAI's ``{"error": {"message"}}`` or the body."""
    try:
        body = response.json()
    except Exception:
        try:
            text = response.text.strip()
        except Exception:
            text = ""
        return text[:200] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    if isinstance(body, dict) and body.get("detail"):
        return str(body["detail"])[:300]
    return json.dumps(body)[:200]


def _completions_url(api_base: str) -> str:
    base = api_base.rstrip("/")
    return f"{base}/completions" if base.endswith("/v1") else f"{base}/v1/completions"


def _checked_url(url: str, api_base: str) -> str:
    """``url`` if httpx can send to it; a malformed ``api_base`` is a configuration error."""
    import httpx

    hint = "give the server's base URL, e.g. http://127.0.0.1:8080/v1"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise ConfigError(f"api_base {api_base!r} is not a valid URL: {exc}", hint=hint) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"api_base {api_base!r} is not an http(s) URL", hint=hint)
    return url


class OpenAIServerBackend(Backend):
    """gpt-oss behind an OpenAI-compatible ``/v1/completions`` endpoint."""

    def __init__(self, config: BackendConfig) -> None:
        import httpx

        if not config.api_base:
            raise ServerError("no server address (api_base) was given")
        self.config = config
        self.url = _checked_url(_completions_url(config.api_base), config.api_base)
        if config.context_size is None:
            self.context_size = SERVER_CONTEXT
            self.context_reason = (
                f"{SERVER_CONTEXT:,} tokens: gpt-oss's trained context, assumed for the server "
                "(--context sets what it really serves)"
            )
        else:
            self.context_size = config.context_size
            self.context_reason = f"{config.context_size:,} tokens: as set"
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._timeout = config.timeout
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(config.timeout, connect=min(_CONNECT_TIMEOUT, config.timeout)),
        )

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
        """An estimate (about 4 bytes a token for o200k): servers tokenize differently."""
        return math.ceil(len(text.encode("utf-8")) / 4)

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
        header = _HeaderWatch(prompt)
        splitter = MarkerSplitter()
        reason: StopReason | None = None
        finish: str | None = None
        events = 0
        with (
            _server_errors(self.url, self._timeout),
            self._client.stream("POST", self.url, json=body) as response,
        ):
            if response.status_code >= 400:
                response.read()  # the error message is in the body
                response.raise_for_status()
            for data in _sse_data(response):
                if cancel is not None and cancel.is_set():
                    reason = StopReason.CANCELLED
                    break
                events += 1
                if data == "[DONE]":
                    break
                event = json.loads(data)
                text, finish, usage = _completion_event(event)
                if usage:
                    generation.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    generation.prompt_tokens_evaluated = generation.prompt_tokens
                for piece in splitter.feed(text):
                    header.see(piece)
                    if piece.special and piece.text in tokens.STOP_TOKENS:
                        reason = StopReason.CALL if piece.text == tokens.CALL else StopReason.RETURN
                    if not piece.special:
                        generation.completion_tokens += 1
                    yield piece
                    if reason is not None:
                        break
                if reason is not None:
                    break
            if events == 0 and reason is None:
                raise _ServerAnswer("closed the stream without sending any event")
        if reason is None:
            for piece in splitter.flush():
                yield piece
            if finish == "length":
                reason = StopReason.MAX_TOKENS
            elif finish == "stop":
                marker = tokens.CALL if header.recipient else tokens.RETURN
                yield Piece(marker, special=True)
                reason = StopReason.CALL if header.recipient else StopReason.RETURN
            else:
                reason = StopReason.END_OF_STREAM
        generation.stop_reason = reason


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


def _sse_data(response: httpx.Response) -> Iterator[str]:
    """The ``data`` of each server-sent event (multi-line data joined with newlines)."""
    lines: list[str] = []
    for line in response.iter_lines():
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            lines.append(value[1:] if value.startswith(" ") else value)
    if lines:
        yield "\n".join(lines)


def _completion_event(event: Any) -> tuple[str, str | None, dict[str, Any] | None]:
    """(text, finish_reason, usage) of one completion chunk; errors and junk raise."""
    if not isinstance(event, dict):
        raise _ServerAnswer(f"sent an event that is not an object: {json.dumps(event)[:80]}")
    if "error" in event:
        error = event["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise _ServerAnswer(f"reported an error: {str(message)[:300]}")
    choices = event.get("choices")
    usage = event.get("usage") if isinstance(event.get("usage"), dict) else None
    if choices == [] and usage is not None:
        return "", None, usage
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _ServerAnswer(f"sent an event without choices: {json.dumps(event)[:80]}")
    choice = choices[0]
    text = choice.get("text", "")
    if not isinstance(text, str):
        raise _ServerAnswer(f"sent a choice whose text is not a string: {json.dumps(choice)[:80]}")
    finish = choice.get("finish_reason")
    return text, finish if isinstance(finish, str) else None, usage
