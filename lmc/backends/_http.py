"""What every server transport shares: the client, one mapping of HTTP errors, SSE, URLs and
the key.

The client (:func:`make_client`) is lmc's own small one (:mod:`lmc.backends._wire`) for an
``http://`` server, httpx for ``https://`` or through a proxy: the two answer alike
(:class:`HttpClient`, :class:`HttpResponse`), and an ``lmc run`` against a local server does
not import httpx. Every foreign error (either client's, JSON, a server's error answer) becomes
a :class:`lmc.errors.ServerError` in :func:`server_errors`, the one place that maps them. A
refused key (HTTP 401/403) is one line naming the variable the key came from.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, Protocol
from urllib.parse import urlsplit

from lmc.errors import ConfigError, ServedContextOverflow, ServerError, StreamDroppedError

if TYPE_CHECKING:
    from lmc.backends.base import BackendConfig

__all__ = [
    "HttpClient",
    "HttpResponse",
    "ServerAnswer",
    "StreamCut",
    "checked_url",
    "key_source",
    "make_client",
    "server_errors",
    "split_base",
    "sse_data",
    "transport_errors",
]

_CONNECT_TIMEOUT = 10.0


class ServerAnswer(Exception):
    """Raised inside the mapping block for an answer that is not what the API promises."""


class StreamCut(ServerAnswer):
    """The stream ended before the server's end of answer (``[DONE]``, ``done``, a finish)."""


class HttpResponse(Protocol):
    """An answer as both clients give it."""

    @property
    def status_code(self) -> int: ...
    @property
    def reason_phrase(self) -> str: ...
    @property
    def text(self) -> str: ...
    def read(self) -> bytes: ...
    def json(self) -> Any: ...
    def iter_lines(self) -> Iterator[str]: ...
    def raise_for_status(self) -> object: ...


class HttpClient(Protocol):
    """What lmc asks of an HTTP client (lmc's own for http://, httpx's otherwise)."""

    def get(self, url: str) -> HttpResponse: ...
    def post(self, url: str, *, json: Any = ...) -> HttpResponse: ...
    def request(
        self, method: str, url: str, *, json: Any = ..., timeout: float = ...
    ) -> HttpResponse: ...
    def stream(
        self, method: str, url: str, *, json: Any = ...
    ) -> AbstractContextManager[HttpResponse]: ...
    def close(self) -> None: ...


def _failure(exc: BaseException) -> str | None:
    """What kind of transport failure ``exc`` is (None: not one), for either client; httpx's
    classes are looked at only when httpx was imported (it raised nothing otherwise)."""
    wire = sys.modules.get("lmc.backends._wire")
    if wire is not None and isinstance(exc, wire.WireError):
        kinds = (
            (wire.StatusError, "status"),
            (wire.ConnectFailed, "connect"),
            (wire.TimedOut, "timeout"),
            (wire.Dropped, "dropped"),
        )
        return next((kind for cls, kind in kinds if isinstance(exc, cls)), "other")
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(exc, httpx.HTTPError):
        return None
    kinds = (
        (httpx.ConnectError, "connect"),
        (httpx.TimeoutException, "timeout"),
        (httpx.HTTPStatusError, "status"),
        ((httpx.RemoteProtocolError, httpx.ReadError), "dropped"),
    )
    return next((kind for cls, kind in kinds if isinstance(exc, cls)), "other")


def transport_errors() -> tuple[type[Exception], ...]:
    """The exceptions a request may raise for a bad URL or a failed transport."""
    errors: list[type[Exception]] = [ValueError]
    if wire := sys.modules.get("lmc.backends._wire"):
        errors.append(wire.WireError)
    if httpx := sys.modules.get("httpx"):
        errors += [httpx.HTTPError, httpx.InvalidURL]
    return tuple(errors)


def _transport_error(
    kind: str, exc: Exception, url: str, timeout: float, key_from: str | None
) -> NoReturn:
    if kind == "connect":
        raise ServerError(
            f"cannot connect to {url}: {_reason(exc) or 'connection refused'}",
            hint="Is the server running, and is --api-base its address (e.g. http://host:8000/v1)?",
        ) from exc
    if kind == "timeout":
        raise ServerError(f"{url} did not answer within {timeout:g} s") from exc
    if kind == "status":
        response: Any = getattr(exc, "response", None)
        status = response.status_code
        if status in (401, 403):
            raise ServerError(_refused(url, status, key_from)) from exc
        text = f"{url} answered HTTP {status}: {_error_text(response)}"
        _raise_overflow(text, _json_body(response))
        raise ServerError(text) from exc
    if kind == "dropped":
        raise StreamDroppedError(
            f"{url} closed the connection before the answer ended: {_reason(exc)}"
        ) from exc
    raise ServerError(f"the connection to {url} failed: {_reason(exc)}") from exc


@contextmanager
def server_errors(url: str, timeout: float, key_from: str | None = None) -> Iterator[None]:
    """The one place where transport, JSON and protocol errors become ServerError."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise ServerError(f"{url} sent a malformed event (not JSON): {exc.doc[:80]!r}") from exc
    except StreamCut as exc:
        raise StreamDroppedError(f"{url} {exc}") from exc
    except ServerAnswer as exc:
        _raise_overflow(f"{url} {exc}", None)
        raise ServerError(f"{url} {exc}") from exc
    except Exception as exc:
        kind = _failure(exc)
        if kind is None:
            raise
        _transport_error(kind, exc, url, timeout, key_from)


def _raise_overflow(text: str, body: Any) -> None:
    """A ServedContextOverflow when the server's error says the prompt does not fit."""
    from lmc.backends._overflow import overflow_in

    found = overflow_in(text, body)
    if found is None:
        return
    prompt, context = found
    said = f"{context:,} tokens" if context else "a size it did not say"
    raise ServedContextOverflow(
        text,
        prompt_tokens=prompt,
        context_size=context,
        hint=f"The server's context is {said}: load the model there with a larger context, "
        "or give lmc --context with the size it serves.",
    )


def _json_body(response: HttpResponse) -> Any:
    try:
        return response.json()
    except Exception:
        return None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _error_text(response: HttpResponse) -> str:
    """An error answer's message on one line (a heading line ending in ':' keeps the next)."""
    lines = [line.strip() for line in _error_body(response).splitlines() if line.strip()]
    if not lines:
        return response.reason_phrase
    text = " ".join(lines[:2]) if lines[0].endswith(":") else lines[0]
    return text[:300]


def _error_body(response: HttpResponse) -> str:
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


def checked_url(url: str, api_base: str) -> str:
    """``url`` if it can be sent to; a malformed ``api_base`` is a configuration error."""
    hint = "give the server's base URL, e.g. http://127.0.0.1:8080/v1"
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number or out of range raises
        if any(ord(c) <= 32 or ord(c) == 127 for c in url):
            raise ValueError("Invalid non-printable ASCII character in URL")
        if parts.scheme == "https":  # httpx sends it: its own check too
            import httpx

            try:
                httpx.URL(url)
            except httpx.InvalidURL as exc:
                raise ValueError(str(exc)) from exc
    except ValueError as exc:
        raise ConfigError(f"api_base {api_base!r} is not a valid URL: {exc}", hint=hint) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"api_base {api_base!r} is not an http(s) URL", hint=hint)
    return url


def sse_data(response: HttpResponse) -> Iterator[str]:
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


def split_base(api_base: str) -> tuple[str, str]:
    """(server root, its /v1 URL) for a root or a /v1 URL."""
    base = api_base.rstrip("/")
    if base.endswith("/v1"):
        return base[: -len("/v1")], base
    return base, f"{base}/v1"


def _refused(url: str, status: int, key_from: str | None) -> str:
    what = "refused the API key" if key_from else "needs an API key"
    where = f"from ${key_from}" if key_from else "set LMC_API_KEY (or OPENAI_API_KEY)"
    verb = "check the key" if key_from else ""
    tail = f"{verb} {where}".strip()
    return f"{url} {what} (HTTP {status}): {tail}"


def key_source(
    config: BackendConfig, env: dict[str, str] | None = None
) -> tuple[str | None, str | None]:
    """(key, where it came from): the config's own key, else ``LMC_API_KEY``, else the
    variable ``api_key_env`` names (``OPENAI_API_KEY``). Never logged or stored."""
    import os

    env = dict(os.environ) if env is None else env
    if config.api_key:
        return config.api_key, "the api_key setting"
    for name in ("LMC_API_KEY", config.api_key_env or "OPENAI_API_KEY"):
        value = env.get(name, "").strip()
        if value:
            return value, name
    return None, None


#: Variables that send httpx's requests through a proxy (lmc's own client has none).
_PROXY_VARIABLES = ("http_proxy", "all_proxy")


def _own_client_suffices(api_base: str | None) -> bool:
    """An http:// server reached directly: no TLS, no proxy."""
    if not (api_base or "").strip().lower().startswith("http://"):
        return False
    return not any(os.environ.get(n) or os.environ.get(n.upper()) for n in _PROXY_VARIABLES)


def make_client(config: BackendConfig, key: str | None) -> HttpClient:
    """A client with the bearer key and the configured timeouts, for ``api_base``: lmc's own
    (:mod:`lmc.backends._wire`) for an ``http://`` server reached directly, else httpx.

    TLS is set up (certificates verified) for an https:// server only: loading the
    certificate store costs 25-50 ms a client, and an http:// server (a local llama.cpp,
    Ollama) has no use for it. The client sends nowhere else and follows no redirects.
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    connect = min(_CONNECT_TIMEOUT, config.timeout)
    if _own_client_suffices(config.api_base):
        from lmc.backends._wire import Client

        return Client(headers, timeout=config.timeout, connect=connect)
    import httpx

    secure = (config.api_base or "").strip().lower().startswith("https://")
    return httpx.Client(
        headers=headers,
        timeout=httpx.Timeout(config.timeout, connect=connect),
        verify=secure,
        follow_redirects=False,
    )


def json_object(data: str) -> dict[str, Any]:
    """One event's JSON, which must be an object; an ``error`` in it is the server's error."""
    event = json.loads(data)
    if not isinstance(event, dict):
        raise ServerAnswer(f"sent an event that is not an object: {data[:80]}")
    if event.get("error"):
        error = event["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerAnswer(f"reported an error: {str(message)[:300]}")
    return event
