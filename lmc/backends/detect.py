"""Which dialect a server speaks, which model to ask for, and with which key.

``--api-base`` may be a server's root (``http://localhost:11434``) or its ``/v1`` URL.
``--model ollama:NAME`` and ``--model lmstudio:NAME`` mean those servers on their default
local ports (a given ``--api-base`` wins; the prefix is never sent).

``api_style = "auto"`` finds out what keeps the most of the model's output:

1. Ollama (``GET /api/version`` answers): its native ``/api/chat`` (thinking and tool calls
   as objects);
2. LM Studio (``GET /api/v0/models``, its own REST API, answers): Chat Completions;
3. otherwise one token of a raw completion, biased towards ``<|channel|>`` (gpt-oss starts
   every answer with it anyway): raw completions when the marker comes back, Chat Completions
   when it is stripped, when plain text comes back instead (the server templates the prompt
   itself) or when the server does not serve ``/v1/completions`` (hosted providers); the
   Responses API when it serves neither that nor ``/v1/chat/completions``.

Without ``--model`` the server's model list is asked; the only model, or the only gpt-oss
one, is taken, and otherwise the error lists them. A server without a list gets requests
without a ``model`` field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from lmc.backends._http import checked_url, key_source, make_client, server_errors, split_base
from lmc.errors import ConfigError, ServerError
from lmc.settings import API_STYLES

if TYPE_CHECKING:
    from collections.abc import Callable

    from lmc.backends._http import HttpResponse
    from lmc.backends.base import BackendConfig

__all__ = ["API_STYLES", "SHORTCUTS", "Detected", "choose_model", "detect", "split_base"]

#: ``--model PREFIX:NAME`` -> (the server's default local address, its dialect).
SHORTCUTS: Final = {
    "ollama": ("http://127.0.0.1:11434", "ollama"),
    "lmstudio": ("http://127.0.0.1:1234", "chat"),
}
#: The probe's prompt and the id of ``<|channel|>`` in o200k_harmony.
_PROBE_PROMPT: Final = "<|start|>user<|message|>Hi<|end|><|start|>assistant"
_CHANNEL_ID: Final = "200005"
_NOT_SERVED: Final = frozenset({400, 404, 405, 422, 501})
_NO_RAW: Final = "the server does not serve raw completions"


@dataclass(frozen=True, slots=True)
class Detected:
    """What :func:`detect` found: the config to open, the dialect, and why."""

    config: BackendConfig
    dialect: str
    reason: str
    markers_checked: bool = False  # a raw probe showed the markers come back


def _shortcut(config: BackendConfig) -> tuple[BackendConfig, str | None]:
    """``ollama:``/``lmstudio:`` models: the server's address, the bare id, its dialect."""
    model = config.model or ""
    prefix, colon, rest = model.partition(":")
    if not colon or prefix not in SHORTCUTS:
        return config, None
    address, dialect = SHORTCUTS[prefix]
    if not rest:
        raise ConfigError(f"--model {model!r} names no model (e.g. {prefix}:gpt-oss:20b)")
    return replace(config, model=rest, api_base=config.api_base or address), dialect


class _Probe:
    """GET/POST against the server, every failure mapped to a one-line ServerError."""

    def __init__(self, config: BackendConfig, known: Callable[[str], Any] | None = None) -> None:
        assert config.api_base is not None
        self.known = known
        self.root, self.v1 = split_base(config.api_base)
        checked_url(self.v1, config.api_base)
        key, self.key_from = key_source(config)
        self.timeout = config.timeout
        self.client = make_client(config, key)

    def get(self, url: str) -> Any | None:
        """The JSON at ``url``, or None when it is not there (an error status, not JSON).
        A JSON answer already read is taken as it is; anything else is asked again (so a
        refused key still ends in its one-line error)."""
        answer = None if self.known is None else self.known(url)
        if answer is not None:
            return answer
        with server_errors(self.root, self.timeout, self.key_from):
            response = self.client.get(url)
            if response.status_code in (401, 403):
                response.raise_for_status()
        if response.status_code >= 400:
            return None
        try:
            return response.json()
        except (ValueError, json.JSONDecodeError):
            return None

    def post(self, url: str, body: dict[str, Any]) -> HttpResponse:
        with server_errors(self.root, self.timeout, self.key_from):
            response = self.client.post(url, json=body)
            if response.status_code in (401, 403):
                response.raise_for_status()
        return response


def _model_ids(probe: _Probe, ollama: bool) -> list[str] | None:
    """The server's model ids, or None when it keeps no list."""
    if ollama:
        tags = probe.get(f"{probe.root}/api/tags")
        if isinstance(tags, dict) and isinstance(tags.get("models"), list):
            return [
                str(m.get("model") or m.get("name")) for m in tags["models"] if isinstance(m, dict)
            ]
    listing = probe.get(f"{probe.v1}/models")
    if isinstance(listing, dict) and isinstance(listing.get("data"), list):
        return [str(m["id"]) for m in listing["data"] if isinstance(m, dict) and m.get("id")]
    return None


def choose_model(ids: list[str] | None, url: str) -> str | None:
    """The only model, or the only gpt-oss one; None without a list; else a clear error."""
    if ids is None:
        return None
    if len(ids) == 1:
        return ids[0]
    gpt_oss = [i for i in ids if "gpt-oss" in i.lower()]
    if len(gpt_oss) == 1:
        return gpt_oss[0]
    listed = ", ".join(ids[:20]) if ids else "none"
    raise ConfigError(
        f"{url} serves {len(ids)} models; choose one with --model (served: {listed})"
        if ids
        else f"{url} serves no model yet",
        hint="load or pull gpt-oss on the server, then pass --model with its id",
    )


def _raw_probe(probe: _Probe, model: str | None) -> tuple[str, str, bool]:
    """(dialect, why, markers seen) from one raw token pushed towards ``<|channel|>``."""
    body: dict[str, Any] = {
        "prompt": _PROBE_PROMPT,
        "max_tokens": 1,
        "temperature": 0,
        "logit_bias": {_CHANNEL_ID: 100},
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,
    }
    if model:
        body["model"] = model
    url = f"{probe.v1}/completions"
    response = probe.post(url, body)
    if response.status_code in (400, 422):  # perhaps the bias it refuses: once without
        body.pop("logit_bias")
        response = probe.post(url, body)
    if response.status_code in _NOT_SERVED:
        return (
            "chat",
            f"{_NO_RAW} (HTTP {response.status_code})",
            False,
        )
    if response.status_code >= 400:
        with server_errors(url, probe.timeout, probe.key_from):
            response.raise_for_status()
    try:
        text = str(response.json()["choices"][0].get("text") or "")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        # Not OpenAI's shape: raw as before, each answer checked for the markers.
        return "completions", "raw completions (the server's answer to a probe was unclear)", False
    if "<|" in text:
        return "completions", "the server returns Harmony's special tokens", True
    if not text:
        return "chat", "the server strips Harmony's special tokens from raw completions", False
    # gpt-oss always starts with <|channel|> (kept, or stripped to nothing): plain text here
    # is a server that applies its own template to the prompt.
    return "chat", f"the server's raw completion began {text[:20]!r}, not a Harmony marker", False


def detect(config: BackendConfig, known: Callable[[str], Any] | None = None) -> Detected:
    """The dialect and model for ``config`` (which has ``api_base`` or a shortcut model).
    ``known``: JSON answers already read from the server by URL (None: not read), asked
    before a GET is sent (:class:`lmc.backends.served.ServedAnswers` reads the same URLs)."""
    style = (config.api_style or "auto").lower()
    if style not in API_STYLES:
        raise ConfigError(f"api_style {config.api_style!r} is not one of {', '.join(API_STYLES)}")
    config, shortcut = _shortcut(config)
    if not config.api_base:
        raise ServerError("no server address (api_base) was given")
    probe = _Probe(config, known)
    try:
        ollama = style in ("auto", "ollama") and (shortcut == "ollama" or _is_ollama(probe))
        if not config.model:
            config = replace(config, model=choose_model(_model_ids(probe, ollama), probe.root))
        if style != "auto":
            return Detected(config, style, "as set (--api-style)")
        if ollama:
            return Detected(config, "ollama", "Ollama: its native /api/chat")
        if shortcut == "chat" or _is_lm_studio(probe):
            return Detected(config, "chat", "LM Studio: Chat Completions")
        dialect, why, checked = _raw_probe(probe, config.model)
        if dialect == "chat" and why.startswith(_NO_RAW) and not _serves_chat(probe, config.model):
            return Detected(config, "responses", "the server serves only the Responses API")
        return Detected(config, dialect, why, markers_checked=checked)
    finally:
        probe.client.close()


def _serves_chat(probe: _Probe, model: str | None) -> bool:
    """Whether ``/v1/chat/completions`` is there (one token asked; only a missing route says
    no: any other answer, even an error, is a server that has it)."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    if model:
        body["model"] = model
    return probe.post(f"{probe.v1}/chat/completions", body).status_code not in (404, 405, 501)


def _is_ollama(probe: _Probe) -> bool:
    version = probe.get(f"{probe.root}/api/version")
    return isinstance(version, dict) and isinstance(version.get("version"), str)


def _is_lm_studio(probe: _Probe) -> bool:
    listing = probe.get(f"{probe.root}/api/v0/models")
    if not isinstance(listing, dict) or listing.get("object") != "list":
        return False
    data = listing.get("data")
    return isinstance(data, list) and all(
        isinstance(m, dict) and "type" in m and "compatibility_type" in m for m in data
    )
