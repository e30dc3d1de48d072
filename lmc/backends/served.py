"""The context a server really serves, read from the server itself, and where it came from.

lmc compacts against ``backend.context_size``; for a server that is what the server states,
not an assumption (a prompt past it is cut in silence by Ollama, refused by the others):

- Ollama: ``/api/ps`` lists each loaded model with its ``context_length``; ``/api/show``
  gives the trained size (``model_info["<arch>.context_length"]``). With the native
  ``/api/chat`` lmc sends ``options.num_ctx`` itself (:class:`NumCtx`), so the context is the
  trained one (or ``--context``), capped by the KV cache the serving machine fits
  (:mod:`lmc.backends.served_memory`); with ``/v1`` (which takes no num_ctx) the loaded one,
  the model loaded first when it is not (an empty ``/api/generate`` loads it);
- LM Studio: ``/api/v0/models``, ``loaded_context_length`` of a loaded model (else
  ``max_context_length``, its trained size);
- llama.cpp's server: ``/props``, ``default_generation_settings.n_ctx`` (per slot);
- vLLM: ``/v1/models``, ``max_model_len``;
- hosted providers: their model list's ``context_length``/``context_window`` when it has one,
  else gpt-oss's trained context, said as an assumption.

``--context`` (``context_size``) still wins. Reading never fails the backend: a server that
answers none of these gets the assumption, said so.

The server's own token counts (``prompt_eval_count``, ``usage.prompt_tokens``) correct lmc's
estimate as the conversation goes (:class:`Calibration`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from lmc.backends._http import key_source, make_client, split_base, transport_errors
from lmc.backends.served_memory import fitting_context, kv_cost, serving_memory
from lmc.errors import LmcError

if TYPE_CHECKING:
    from collections.abc import Callable

    from lmc.backends._http import HttpClient
    from lmc.backends.base import BackendConfig

__all__ = [
    "OLLAMA_DEFAULT",
    "TRAINED",
    "Calibration",
    "NumCtx",
    "Served",
    "ServedAnswers",
    "drop_ahead",
    "read_ahead",
    "read_served",
    "take_ahead",
]

#: gpt-oss's trained context: what a server that says nothing is assumed to serve.
TRAINED: Final = 131_072
#: Ollama's default context when it says nothing of a model (its smallest VRAM tier).
OLLAMA_DEFAULT: Final = 4096
#: The first num_ctx lmc asks Ollama for; each step after doubles it.
NUM_CTX_FIRST: Final = 8192
#: Room kept for the answer when a request names no max_tokens.
ANSWER_ROOM: Final = 2048
_PROBE_TIMEOUT: Final = 15.0


@dataclass(frozen=True, slots=True)
class Served:
    """The context lmc works against, where it was read, and the trained size when known."""

    size: int
    source: str
    trained: int = 0
    #: Ollama's native dialect: lmc sizes num_ctx per request, up to ``size``.
    sized_by_lmc: bool = False

    @property
    def reason(self) -> str:
        return f"{self.size:,} tokens ({self.source})"


class NumCtx:
    """Ollama's ``num_ctx`` for each request: what the conversation needs, within ``cap``.

    Ollama allocates the KV cache by num_ctx and reloads the model for each new value, so the
    value stays put while the conversation fits and grows in a few large steps (powers of two
    from 8,192), never past the trained context or ``--context``, and never shrinks.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.current = 0

    def size_for(self, need: int) -> int:
        if self.current and (need <= self.current or self.current >= self.cap):
            return self.current
        size = NUM_CTX_FIRST
        while size < need:
            size *= 2
        self.current = min(max(size, self.current), self.cap)
        return self.current


class Calibration:
    """lmc's token estimate (about 4 bytes a token), corrected by the server's own counts.

    Each answer that carries the prompt's size as the server counted it moves the ratio
    halfway towards what it shows. A count far below the estimate may be a server that cut
    the prompt (Ollama does, silently), so the ratio never goes below 0.8; nor above 2.
    ``revision`` changes whenever the ratio does (counts kept elsewhere are then stale).
    """

    MIN_SAMPLE: Final = 256  # tokens: smaller prompts say little about the ratio

    #: A count below this share of the estimate is a prompt the server cut (or a tokenizer
    #: far from lmc's estimate): said, never learnt from.
    CUT_SHARE: Final = 0.7
    #: A prompt that grew by this many tokens since the last one while the server's count
    #: grew by less than a third of it was cut too (Ollama keeps what fits, so its count
    #: stalls at its context while the conversation grows).
    MIN_GROWTH: Final = 64
    #: Below this share, a count is of the tokens the server's cache did not hold.
    CACHED_SHARE: Final = 0.5

    def __init__(self) -> None:
        self.ratio = 1.0
        self.revision = 0
        #: (the server's count, lmc's estimate) of the last prompt that looked cut; the
        #: agent takes it (and sets it back to None) when the server cuts in silence.
        self.cut: tuple[int, int] | None = None
        self._last = (0, 0)  # (estimate, count) of the last prompt the server counted

    @staticmethod
    def raw(text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) / 4)

    def count(self, text: str) -> int:
        return math.ceil(self.raw(text) * self.ratio)

    def observe(self, estimate: int, actual: int) -> None:
        """``estimate``: the raw estimate of the prompt sent; ``actual``: the server's count."""
        expected = estimate * self.ratio
        if estimate < self.MIN_SAMPLE or actual < expected * self.CACHED_SHARE:
            # Too small to say anything, or a count of only what the server's cache did not
            # hold (some Ollama versions count so): neither a lesson nor a cut.
            return
        last, self._last = self._last, (estimate, actual)
        grown = (estimate - last[0]) * self.ratio
        stalled = last[1] and grown >= self.MIN_GROWTH and actual - last[1] < grown * 0.3
        if actual < expected * self.CUT_SHARE or stalled:
            self.cut = (actual, math.ceil(expected))
            return
        ratio = min(max((self.ratio + actual / estimate) / 2, 0.8), 2.0)
        if abs(ratio - self.ratio) >= 0.01:
            self.ratio = round(ratio, 3)
            self.revision += 1


class _Reader:
    """GETs and POSTs against the server; None for anything that is not a JSON answer."""

    def __init__(self, config: BackendConfig) -> None:
        from dataclasses import replace

        assert config.api_base is not None
        self.root, self.v1 = split_base(config.api_base)
        key, _ = key_source(config)
        self.key = key  # the key these requests carry (never logged or stored)
        #: Loading a model takes as long as a request may (reading takes a moment).
        self.load_timeout = config.timeout
        self.client: HttpClient = make_client(
            replace(config, timeout=min(config.timeout, _PROBE_TIMEOUT)), key
        )

    def get(self, path: str) -> Any:
        return self._json("GET", path, None)

    def post(self, path: str, body: dict[str, Any], timeout: float | None = None) -> Any:
        return self._json("POST", path, body, timeout)

    def _json(
        self, method: str, url: str, body: dict[str, Any] | None, timeout: float | None = None
    ) -> Any:
        try:
            if timeout is not None:
                response = self.client.request(method, url, json=body, timeout=timeout)
            else:
                response = self.client.request(method, url, json=body)
            return response.json() if response.status_code < 400 else None
        except transport_errors():  # a malformed api_base too:
            return None  # this runs in a thread, and the request path says it in one line


def _entry(listing: Any, model: str | None, *keys: str) -> dict[str, Any] | None:
    """The listed model named ``model`` (under any of ``keys``), else the only one."""
    if isinstance(listing, dict):
        listing = listing.get("models", listing.get("data"))
    if not isinstance(listing, list):
        return None
    entries = [e for e in listing if isinstance(e, dict)]
    if model:
        names = {model, f"{model}:latest"}
        for entry in entries:
            if any(entry.get(key) in names for key in keys):
                return entry
        return None
    if len(entries) != 1:  # the only gpt-oss one, as lmc's model choice takes it
        entries = [e for e in entries if any("gpt-oss" in str(e.get(k)) for k in keys)]
    return entries[0] if len(entries) == 1 else None


def _positive(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _ollama(
    reader: _Reader,
    model: str | None,
    native: bool,
    cap: int | None,
    memory: Callable[[str], int | None],
) -> Served:
    show = reader.post(f"{reader.root}/api/show", {"model": model or ""})
    info = show.get("model_info") if isinstance(show, dict) else None
    info = info if isinstance(info, dict) else {}
    arch = info.get("general.architecture")
    trained = _positive(info.get(f"{arch}.context_length"))
    if native:
        if cap is not None:  # the person's choice wins over the machine too
            return Served(cap, "as set; lmc sends it as num_ctx", trained, sized_by_lmc=True)
        return _ollama_native(reader.root, info, trained, memory)
    loaded = _ollama_loaded(reader, model)
    if not loaded:  # an empty /api/generate loads the model as /v1 will use it
        load = {"model": model or "", "stream": False}
        reader.post(f"{reader.root}/api/generate", load, reader.load_timeout)
        loaded = _ollama_loaded(reader, model)
    if loaded:
        return Served(loaded, "Ollama /api/ps", trained)
    return Served(OLLAMA_DEFAULT, "Ollama's default context, assumed: /api/ps lists no size")


def _ollama_native(
    root: str, info: dict[str, Any], trained: int, memory: Callable[[str], int | None]
) -> Served:
    """The trained context (or gpt-oss's), capped by what the serving machine's memory
    holds of its KV cache (:mod:`lmc.backends.served_memory`)."""
    if trained:
        size, source = trained, "Ollama /api/show, the trained context"
    else:
        size, source = TRAINED, "gpt-oss's trained context, assumed"
    source += "; lmc sizes num_ctx to the conversation"
    cost = kv_cost(info)
    free = memory(root) if cost is not None else None
    if cost is None:
        source += "; /api/show gives no KV cache dimensions, so no memory cap"
    elif free is None:
        source += "; no memory cap: lmc reads free memory only for a server on this machine"
    elif fitted := fitting_context(cost, free, size):
        size, line = fitted
        source += f", {line}"
    return Served(size, source, trained, sized_by_lmc=True)


def _ollama_loaded(reader: _Reader, model: str | None) -> int:
    entry = _entry(reader.get(f"{reader.root}/api/ps"), model, "name", "model")
    return _positive(entry.get("context_length")) if entry else 0


def _lm_studio(listing: Any, model: str | None) -> Served | None:
    entry = _entry(listing, model, "id")
    if entry is None:
        return None
    trained = _positive(entry.get("max_context_length"))
    loaded = _positive(entry.get("loaded_context_length"))
    if loaded:
        return Served(loaded, "LM Studio /api/v0/models loaded_context_length", trained)
    if trained:
        source = "LM Studio /api/v0/models max_context_length; the model is not loaded yet"
        return Served(trained, source, trained)
    return None


def _llama_cpp(props: Any) -> Served | None:
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else 0
    if not n_ctx:
        return None
    return Served(n_ctx, "llama.cpp /props default_generation_settings.n_ctx")


#: Fields a model list names the context with: vLLM, then hosted providers' spellings.
_LIST_FIELDS: Final = ("max_model_len", "context_length", "context_window", "max_context_length")


def _model_list(listing: Any, model: str | None) -> Served | None:
    entry = _entry(listing, model, "id")
    if entry is None:
        return None
    server = "vLLM " if entry.get("owned_by") == "vllm" else ""
    for field in _LIST_FIELDS:
        size = _positive(entry.get(field))
        if size:
            return Served(size, f"{server}/v1/models {field}")
    return None


class ServedAnswers:
    """The four GETs that say a server's context, all sent at once (each on a connection of
    its own) in background threads, so that reading them costs one round trip and overlaps
    whatever lmc does meanwhile (detecting the dialect and model): a fake or local server
    answers in about a millisecond, yet four in a row delayed every ``lmc run``'s first request.
    Only the answers' paths are fixed; which of them counts needs the model and dialect
    (:func:`read_served`)."""

    def __init__(self, config: BackendConfig) -> None:
        self.reader = _Reader(config)
        root, v1 = self.reader.root, self.reader.v1
        self.urls = (
            f"{root}/api/version",
            f"{root}/api/v0/models",
            f"{root}/props",
            f"{v1}/models",
        )
        self._values: dict[str, Any] = {}
        self._threads = {
            url: threading.Thread(target=self._get, args=(url,), name="lmc-served", daemon=True)
            for url in self.urls
        }
        for thread in self._threads.values():
            thread.start()

    def _get(self, url: str) -> None:
        self._values[url] = self.reader.get(url)

    def serves(self, config: BackendConfig) -> bool:
        """Whether these GETs went where ``config``'s would go, with the same key."""
        if not config.api_base:
            return False
        where = split_base(config.api_base)
        return where == (self.reader.root, self.reader.v1) and key_source(config)[0] == (
            self.reader.key
        )

    def value(self, url: str) -> Any:
        """The JSON answer to ``url`` once it is in; None when ``url`` is not one of these
        GETs or its answer was not JSON (an error status, a refused connection)."""
        thread = self._threads.get(url)
        if thread is None:
            return None
        thread.join()
        return self._values.get(url)

    def get(self, index: int) -> Any:
        """The JSON answer to the ``index``-th GET (None: no JSON answer)."""
        return self.value(self.urls[index])

    def join(self) -> None:
        for thread in self._threads.values():
            thread.join()

    def close(self) -> None:
        self.join()
        self.reader.client.close()


#: GETs sent ahead (:func:`read_ahead`) for the server backend this process opens later.
_AHEAD: list[ServedAnswers] = []
_AHEAD_LOCK = threading.Lock()


def read_ahead(config: BackendConfig) -> None:
    """Send the served context's GETs now, for a server backend this process opens later:
    ``lmc run`` sends them as soon as its settings are read, so the server answers while lmc
    loads (:func:`take_ahead` hands them over). Nothing is sent for an unusable address."""
    if not config.api_base:
        return
    try:
        answers = ServedAnswers(config)
    except (LmcError, ValueError, OSError):
        return  # the backend opened later says what is wrong
    with _AHEAD_LOCK:
        _AHEAD.append(answers)


def take_ahead(config: BackendConfig) -> ServedAnswers | None:
    """The GETs sent ahead to the server ``config`` names, with the same key (None: none);
    any others are dropped unread (their threads end with their requests: waiting for them
    could hold the backend up for a slow server it does not use)."""
    with _AHEAD_LOCK:
        pending = list(_AHEAD)
        _AHEAD.clear()
    return next((answers for answers in pending if answers.serves(config)), None)


def drop_ahead() -> None:
    """Forget the GETs sent ahead that nothing took (the run ended first); their threads
    end with their requests, and the process does not wait for them."""
    with _AHEAD_LOCK:
        _AHEAD.clear()


def read_served(
    config: BackendConfig,
    dialect: str,
    answers: ServedAnswers | None = None,
    memory: Callable[[str], int | None] = serving_memory,
) -> Served:
    """What the server at ``config.api_base`` serves ``config.model`` with; ``answers``: the
    GETs already under way (:class:`ServedAnswers`, for the same server), else sent now;
    ``memory``: the bytes free on the machine serving at a root URL (None: unknown)."""
    answers = answers or ServedAnswers(config)
    reader = answers.reader
    try:
        version = None if dialect == "ollama" else answers.get(0)
        if dialect == "ollama" or (isinstance(version, dict) and "version" in version):
            native = dialect == "ollama"
            return _ollama(reader, config.model, native, config.context_size, memory)
        found = _lm_studio(answers.get(1), config.model)
        found = found or _llama_cpp(answers.get(2))
        found = found or _model_list(answers.get(3), config.model)
    finally:
        answers.close()
    if found is not None:
        return found
    return Served(TRAINED, "gpt-oss's trained context, assumed: the server does not say")
