"""gpt-oss in-process through llama.cpp (llama-cpp-python): the default backend.

Theory of operation
-------------------
The backend owns one llama.cpp context and remembers what is in it: the token ids of the
KV cache (``Llama.input_ids[:n_tokens]``) and, in a :class:`TokenLog`, the ids and bytes of
the last prompt and everything sampled after it. A call

1. tokenizes the prompt, reusing the logged ids for the part it shares with the log, so
   the assistant's sampled tokens come back exactly as sampled;
2. keeps the longest KV prefix the new ids share and evaluates only the rest (with the
   prefix state cache, a fresh process loads the system/developer prefix from disk);
3. samples with llama.cpp's own sampler chain (in replay, a logits processor first leaves
   only the scripted token), emitting each token as a :class:`Piece` at once: special
   tokens as their markers, text with a split UTF-8 character held back;
4. stops on ``<|return|>`` or ``<|call|>`` by token id, never on ``<|end|>``;
5. samples a call's JSON arguments under a grammar made from the tool's schema
   (``SamplingSettings.argument_schemas``, see :mod:`lmc.backends._grammar`).

A sampled token is evaluated only when the next one is needed, so the stop token enters
the KV cache with the next prompt (it is one of that call's evaluated tokens). Foreign
errors are mapped to :mod:`lmc.errors` in :func:`_llama_errors`, the one place that does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lmc.backends import _llama_cpp as llama
from lmc.backends._context import ContextChoice, choose_context
from lmc.backends._grammar import ArgumentGrammar, Utf8Filter
from lmc.backends._pieces import Utf8Pieces
from lmc.backends._prefix_cache import PrefixStateCache, default_cache_dir, prefix_end
from lmc.backends._token_log import TokenLog
from lmc.backends.base import (
    Backend,
    BackendConfig,
    Generation,
    Piece,
    SamplingSettings,
    StopReason,
    StreamGeneration,
)
from lmc.backends.model_file import check_model_file, unloadable
from lmc.backends.replay import ReplayScript
from lmc.errors import BackendError, ContextOverflowError
from lmc.harmony import tokens

__all__ = ["LlamaCppBackend"]

_RANDOM_SEED = 0xFFFFFFFF  # llama.cpp's LLAMA_DEFAULT_SEED: a fresh random seed
_OVERFLOW_HINT = (
    "Start a new conversation, shorten the input, or raise the context size (`lmc "
    "--context TOKENS`, context_size in the config file or the API) if the model and memory "
    "allow it."
)


@contextmanager
def _llama_errors(what: str) -> Iterator[None]:
    """Map llama-cpp-python's exceptions (ValueError, RuntimeError, OSError) to BackendError."""
    try:
        yield
    except (ValueError, RuntimeError, OSError, AssertionError) as exc:
        raise BackendError(f"llama.cpp failed to {what}: {exc}") from exc


class LlamaCppBackend(Backend):
    """A GGUF gpt-oss model in this process; with ``replay``, forced to emit a transcript."""

    def __init__(
        self,
        model_path: str | Path,
        config: BackendConfig | None = None,
        *,
        replay: ReplayScript | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        config = config or BackendConfig()
        self.model_path = Path(model_path)
        self.config = config
        self.replay = replay
        self._callbacks = _CallbackErrors()
        gpu_layers = config.gpu_layers
        if gpu_layers is None:
            gpu_layers = -1 if llama.supports_gpu_offload() else 0
        if not self.model_path.is_file():
            raise BackendError(f"no model file at {self.model_path}")
        check_model_file(self.model_path)  # text, cut short, corrupt: one line, not a crash
        if config.context_size is None:
            choice = choose_context(
                self.model_path,
                offloaded=gpu_layers != 0 and llama.supports_gpu_offload(),
            )
        else:
            choice = ContextChoice(config.context_size, f"{config.context_size:,} tokens: as set")
        #: Why the context has its size (``lmc doctor``, ``--verbose``, ``%tokens``).
        self.context_reason = choice.reason
        kwargs: dict[str, Any] = {
            "model_path": str(self.model_path),
            "n_ctx": choice.size,
            "n_gpu_layers": gpu_layers,
            "seed": config.seed if config.seed is not None else _RANDOM_SEED,
            "verbose": config.verbose,
            # A full-size sliding-window cache, so that any prefix of the context can be kept.
            "swa_full": True,
            # Without it llama.cpp reserves attention buffers that grow with the context
            # faster than the KV cache itself (128 KiB a token for gpt-oss-20b).
            "flash_attn": True,
        }
        if config.threads:
            kwargs["n_threads"] = kwargs["n_threads_batch"] = config.threads
        llama.route_logs(verbose=config.verbose)
        try:
            with _llama_errors(f"load the model {self.model_path}"):
                # Any: llama-cpp-python's Llama is untyped.
                self._llm: Any = llama.open_model(**kwargs)
        except BackendError as exc:
            raise unloadable(self.model_path, str(exc.__cause__ or exc)) from exc
        self.context_size = int(self._llm.n_ctx())
        self._vocab = llama.vocab(self._llm)
        self._markers = self._find_markers()
        self._stops: dict[int, StopReason] = {}
        for marker, reason in ((tokens.RETURN, StopReason.RETURN), (tokens.CALL, StopReason.CALL)):
            ids = [i for i, m in self._markers.items() if m == marker]
            if not ids:
                raise BackendError(
                    f"{self.model_path.name} has no {marker} token: it is not a gpt-oss "
                    "(Harmony) model"
                )
            self._stops[ids[0]] = reason
        self._piece_cache: dict[int, bytes] = {}
        #: How many leading ids of the token log the KV cache is known to hold.
        self._kv_known = 0
        self._prefix_ids: tuple[str, list[int]] | None = None  # the fixed prefix, tokenized
        self._utf8: Utf8Filter | None = None
        self._log = TokenLog(m.encode() for m in tokens.SPECIAL_TOKENS)
        self._prefix_cache: PrefixStateCache | None = None
        if config.prefix_cache:
            stat = self.model_path.stat()
            identity = "|".join(
                map(
                    str,
                    (
                        self.model_path.resolve(),
                        stat.st_size,
                        stat.st_mtime_ns,
                        llama.version(),
                        self.context_size,
                        *(
                            getattr(self._llm.context_params, name, None)
                            for name in ("type_k", "type_v", "flash_attn_type", "flash_attn")
                        ),
                    ),
                )
            )
            self._prefix_cache = PrefixStateCache(cache_dir or default_cache_dir(), identity)
        self._serial = 0  # a new generate() call supersedes an unfinished one
        #: Prefix state files read and written by this backend (tests and benchmarks look).
        self.prefix_cache_hits = 0
        self.prefix_cache_writes = 0

    # ------------------------------------------------------------------ Backend interface

    def generate(
        self,
        prompt: str,
        settings: SamplingSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> Generation:
        settings = settings or SamplingSettings()
        data = prompt.encode("utf-8")
        reused, offset = self._log.reusable(data)
        self._log.truncate(len(reused))
        self._kv_known = min(self._kv_known, len(reused))
        for token in self._tokenize(data[offset:]):
            self._log.append(token, self._piece(token), special=token in self._markers)
        ids = self._log.ids[:]
        if not ids:
            raise BackendError("the prompt is empty")
        if len(ids) > self.context_size:
            raise ContextOverflowError(len(ids), self.context_size, hint=_OVERFLOW_HINT)
        forced = self._tokenize(self.replay.take().encode()) if self.replay else None
        self._serial += 1
        generation = StreamGeneration(len(ids))
        generation.run = self._run(
            generation,
            serial=self._serial,
            prompt=prompt,
            ids=ids,
            settings=settings,
            cancel=cancel,
            forced=forced,
        )
        return generation

    def count_tokens(self, text: str) -> int:
        return len(self._tokenize(text.encode("utf-8")))

    def token_lengths(self, text: str) -> list[int]:
        if not text:
            return []
        with _llama_errors("tokenize"):
            ids = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return [len(self._piece(token).decode("utf-8", errors="replace")) for token in ids]

    def close(self) -> None:
        llm = getattr(self, "_llm", None)
        if llm is not None:
            llm.close()
            self._llm = None

    # -------------------------------------------------------------------- the one loop

    def _run(
        self,
        generation: Generation,
        *,
        serial: int,
        prompt: str,
        ids: list[int],
        settings: SamplingSettings,
        cancel: threading.Event | None,
        forced: list[int] | None,
    ) -> Iterator[Piece]:
        llm = self._llm

        def cancelled() -> bool:
            return (cancel is not None and cancel.is_set()) or serial != self._serial

        keep = self._kv_match(ids)
        if self._prefix_cache is not None:
            keep, evaluated = self._use_prefix_cache(prompt, ids, keep, cancelled)
            generation.prompt_tokens_evaluated += evaluated
        self._truncate_kv(keep)
        if not self._eval(ids[keep:], cancelled):
            generation.stop_reason = StopReason.CANCELLED
            return
        generation.prompt_tokens_evaluated += len(ids) - keep

        grammar = (
            ArgumentGrammar(settings.argument_schemas, self._vocab, self._utf8_filter)
            if settings.argument_schemas
            else None
        )
        sampler = self._sampler(settings, forced, generation)
        constrained = False  # the chain has the grammar stage
        pieces = Utf8Pieces()
        reason = StopReason.END_OF_STREAM
        try:
            while True:
                stop = _stop_before_sampling(generation, settings, cancelled)
                if stop is not None:
                    reason = stop
                    break
                with _llama_errors("sample a token"):
                    token = llama.sample(sampler, llm)
                self._callbacks.reraise()  # a Ctrl-C that landed inside a sampler stage
                generation.completion_tokens += 1
                data = self._piece(token)
                self._log.append(token, data, special=token in self._markers)
                marker = self._markers.get(token)
                if grammar is not None:
                    grammar.accept(token, data, marker)
                    if grammar.active and not constrained:
                        # The chain gets its grammar stage only now: no callback per token
                        # for the many generations that never call a function.
                        sampler.close()
                        sampler = self._sampler(settings, forced, generation, grammar)
                        constrained = True
                yield from pieces.special(marker) if marker is not None else pieces.texts(data)
                if token in self._stops:  # (a marker)
                    reason = self._stops[token]
                    break
                stop = self._stop_after_token(cancelled)
                if stop is not None:
                    reason = stop
                    break
                with _llama_errors("evaluate a token"):
                    llm.eval([token])
                self._kv_known = llm.n_tokens
            yield from pieces.flush()
        finally:
            generation.stop_reason = reason
            sampler.close()
            if grammar is not None:
                grammar.close()

    def _stop_after_token(self, cancelled: Callable[[], bool]) -> StopReason | None:
        if cancelled():
            return StopReason.CANCELLED
        if self._llm.n_tokens >= self.context_size:
            return StopReason.CONTEXT_FULL
        return None

    # ---------------------------------------------------------------------- KV cache

    def _kv_match(self, ids: Sequence[int]) -> int:
        """How many of ``ids`` the KV cache already holds (at least one is left to evaluate).

        The first ``_kv_known`` ids are known to match (the log and the cache agree that far
        and the prompt reused them), so only the ids after them are compared: the work is
        in proportion to the new part of the prompt, not to the context.
        """
        llm = self._llm
        n = min(llm.n_tokens, len(ids))
        keep = min(self._kv_known, n)
        if keep < n:
            cached = llm.input_ids[keep:n].tolist()
            base = keep
            while keep < n and cached[keep - base] == ids[keep]:
                keep += 1
        # Sampling needs the logits of the prompt's last token: evaluate it again.
        return int(min(keep, len(ids) - 1))

    def _truncate_kv(self, keep: int) -> None:
        self._kv_known = min(self._kv_known, llama.drop_kv_after(self._llm, keep))

    def _eval(self, ids: Sequence[int], cancelled: Any) -> bool:
        """Evaluate in batches, checking for cancellation between them."""
        llm = self._llm
        step = max(1, int(llm.n_batch))
        for start in range(0, len(ids), step):
            if cancelled():
                return False
            with _llama_errors("evaluate the prompt"):
                llm.eval(ids[start : start + step])
            self._kv_known = llm.n_tokens  # ids continue the log from the cache's end
        return True

    def _use_prefix_cache(
        self, prompt: str, ids: list[int], keep: int, cancelled: Any
    ) -> tuple[int, int]:
        """Load the fixed prefix's state from disk, or evaluate and store it; (keep, evaluated)."""
        assert self._prefix_cache is not None
        end = prefix_end(prompt)
        if end == 0:
            return keep, 0
        prefix = prompt[:end]
        if self._prefix_ids is None or self._prefix_ids[0] != prefix:
            self._prefix_ids = (prefix, self._tokenize(prefix.encode("utf-8")))
        prefix_ids = self._prefix_ids[1]
        n = len(prefix_ids)
        if keep >= n or n >= len(ids) or ids[:n] != prefix_ids:
            return keep, 0
        payload = self._prefix_cache.load(prefix_ids)
        if payload is not None and self._restore(payload, prefix_ids):
            self.prefix_cache_hits += 1
            return n, 0
        self._truncate_kv(keep)
        if not self._eval(ids[keep:n], cancelled):
            return self._llm.n_tokens, self._llm.n_tokens - keep
        state = self._snapshot()
        if state is not None and self._prefix_cache.store(prefix_ids, state) is not None:
            self.prefix_cache_writes += 1
        return n, n - keep

    def _snapshot(self) -> bytes | None:
        return llama.snapshot_state(self._llm)

    def _restore(self, payload: bytes, prefix_ids: Sequence[int]) -> bool:
        """Replace the KV cache with a stored prefix state; False (and empty) if llama refuses."""
        self._kv_known = 0
        if not llama.restore_state(self._llm, payload, prefix_ids):
            return False
        self._kv_known = len(prefix_ids)  # the prefix ids are the log's first ids (checked)
        return True

    # ---------------------------------------------------------------------- sampling

    def _sampler(
        self,
        settings: SamplingSettings,
        forced: list[int] | None,
        generation: Generation,
        grammar: ArgumentGrammar | None = None,
    ) -> Any:
        sampler = llama.new_sampler()
        if forced is not None:
            sampler.add_custom(self._callbacks.guard(_forcing(forced, generation)))
        if grammar is not None:
            sampler.add_custom(
                self._callbacks.guard(_constraining(grammar, len(forced or ()), generation))
            )
        seed = settings.seed if settings.seed is not None else self.config.seed
        if settings.temperature <= 0:
            sampler.add_greedy()
        else:
            if settings.top_p < 1.0:
                sampler.add_top_p(settings.top_p, 1)
            sampler.add_temp(settings.temperature)
            sampler.add_dist(seed if seed is not None else _RANDOM_SEED)
        return sampler

    # ---------------------------------------------------------------------- tokens

    def _utf8_filter(self) -> Utf8Filter:
        """The vocabulary's UTF-8 shapes, worked out at the first constrained call."""
        if self._utf8 is None:
            n_vocab = llama.vocab_size(self._vocab)
            self._utf8 = Utf8Filter([self._text_piece(t) for t in range(n_vocab)])
        return self._utf8

    def _tokenize(self, data: bytes) -> list[int]:
        if not data:
            return []
        with _llama_errors("tokenize"):
            return list(self._llm.tokenize(data, add_bos=False, special=True))

    def _piece(self, token: int) -> bytes:
        """A token's bytes, special tokens as their text."""
        data = self._piece_cache.get(token)
        if data is None:
            data = self._piece_cache[token] = llama.token_piece(self._vocab, token, special=True)
        return data

    def _text_piece(self, token: int) -> bytes:
        """A token's bytes as text: nothing for control tokens (markers, reserved ids)."""
        if token in self._markers:
            return b""
        return llama.token_piece(self._vocab, token, special=False)

    def _find_markers(self) -> dict[int, str]:
        """Token id -> marker, asking the model's own tokenizer (ids differ between vocabs)."""
        markers: dict[int, str] = {}
        for marker in tokens.SPECIAL_TOKENS:
            ids = self._tokenize(marker.encode())
            if len(ids) == 1:
                markers[ids[0]] = marker
        return markers


def _stop_before_sampling(
    generation: Generation, settings: SamplingSettings, cancelled: Callable[[], bool]
) -> StopReason | None:
    if settings.max_tokens is not None and generation.completion_tokens >= settings.max_tokens:
        return StopReason.MAX_TOKENS
    if cancelled():
        return StopReason.CANCELLED
    return None


class _CallbackErrors:
    """Exceptions raised inside a Python sampler stage, raised again once llama.cpp returns.

    The stages run as ctypes callbacks, and ctypes cannot pass an exception back through C:
    it prints "Exception ignored" and drops it. A Ctrl-C is a KeyboardInterrupt raised
    wherever the main thread runs Python, so one that landed inside a stage (the replay's
    forcing, the arguments' grammar) was lost and the model went on writing.
    """

    def __init__(self) -> None:
        self._error: BaseException | None = None

    def guard(self, stage: Callable[[Any], None]) -> Callable[[Any], None]:
        def guarded(cur_p: Any) -> None:
            try:
                stage(cur_p)
            except BaseException as exc:
                if self._error is None:
                    self._error = exc

        return guarded

    def reraise(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error


def _forcing(forced: list[int], generation: Generation) -> Any:
    """A llama.cpp sampler stage leaving only the next scripted token (replay)."""
    import numpy as np

    def apply(cur_p: Any) -> None:
        step = generation.completion_tokens
        if step >= len(forced):
            return
        target = forced[step]
        ids, logits = llama.candidates(cur_p)
        size = len(ids)
        index = target if target < size and ids[target] == target else -1
        if index < 0:
            hits = np.flatnonzero(ids == target)
            if hits.size == 0:
                return
            index = int(hits[0])
        logits[:] = -np.inf
        logits[index] = 0.0

    return apply


def _constraining(grammar: ArgumentGrammar, n_forced: int, generation: Generation) -> Any:
    """A llama.cpp sampler stage applying the arguments' grammar (not to replayed tokens)."""

    def apply(cur_p: Any) -> None:
        if generation.completion_tokens >= n_forced:
            grammar.apply(cur_p)

    return apply
