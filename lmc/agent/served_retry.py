"""A server's refusals and dropped streams: one compaction and retry, one retry, else one line.

A server whose context is smaller than lmc's estimate allows answers the first prompt past it
with an overflow (llama.cpp's ``exceed_context_size_error``, vLLM's "maximum context length",
LM Studio's 400; :mod:`lmc.backends._overflow` reads them). lmc then takes the size the
server named as the context, compacts the conversation (or leaves out the oldest turns) and
asks once more; a second refusal stops the turn with one line naming the context and
``--context``.

A stream the server (or a proxy) closes mid-answer is asked again once from the same prompt:
nothing of an answer is acted on before it ends (a call runs only after its generation), and
what it had shown stays in the conversation without going back to the model. A second drop
is the server's error, said in one line.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from lmc.agent.history import Entry
from lmc.backends.served import OLLAMA_DEFAULT
from lmc.errors import ServedContextOverflow, StreamDroppedError

if TYPE_CHECKING:
    from lmc.agent.sampling import Outcome
    from lmc.backends.base import Backend
    from lmc.messages import Chunk

__all__ = ["sample_served"]


def sample_served(loop: Any, prompt: str) -> Generator[Chunk, None, Outcome | None]:
    """``loop._sample(prompt)``, with the retries above; None when the turn is to stop (a
    note said why)."""
    overflowed = dropped = False
    while True:
        start = len(loop.transcript.entries)
        try:
            outcome: Outcome = yield from loop._sample(prompt)
        except ServedContextOverflow as exc:
            loop._cancel.clear()  # set by _sample for any error; this one lmc handles
            _hide_from_model(loop, start)
            backend = loop._backend()
            if overflowed:
                yield from loop.notice(_stopped_line(backend, exc))
                return None
            overflowed = True
            _take_served_size(backend, exc, prompt)
            yield from loop.notice(
                f"The server says the prompt does not fit its context ({_size(exc, backend)}): "
                "lmc shortens the conversation and asks again."
            )
            retry = yield from _shortened_prompt(loop, backend)
            if retry is None:
                return None
            prompt = retry
            continue
        except StreamDroppedError as exc:
            if dropped:
                raise
            dropped = True
            loop._cancel.clear()
            _hide_from_model(loop, start)
            yield from loop.notice(
                f"The server closed the stream mid-answer ({exc}); nothing of it was run: "
                "lmc asks again from the same prompt."
            )
            continue
        _recount_if_recalibrated(loop)
        yield from _said_if_cut(loop)
        return outcome


def _shortened_prompt(loop: Any, backend: Backend) -> Generator[Chunk, None, str | None]:
    """Compact against the (new) context, whatever the estimate says; then the prompt."""
    if loop.compactor is not None:
        reserve = loop.settings.sampling.max_tokens or loop.settings.answer_reserve
        reserve = min(reserve, backend.context_size // 4)
        yield from loop.compactor.fit(backend, backend.context_size, reserve, force=True)
    loop._token_counts.clear()
    prompt: str | None = yield from loop._prompt()
    return prompt


def _take_served_size(backend: Backend, exc: ServedContextOverflow, prompt: str) -> None:
    """The server named its context (and the prompt's size): lmc works against those now."""
    if 0 < exc.context_size < backend.context_size:
        backend.context_size = exc.context_size
        backend.context_reason = f"{exc.context_size:,} tokens (the server's overflow answer)"
    calibration = getattr(backend, "calibration", None)
    if calibration is not None and exc.prompt_tokens:
        calibration.observe(calibration.raw(prompt), exc.prompt_tokens)


def _size(exc: ServedContextOverflow, backend: Backend) -> str:
    size = exc.context_size or backend.context_size
    return f"{size:,} tokens"


def _stopped_line(backend: Backend, exc: ServedContextOverflow) -> str:
    return (
        f"Stopped: this exchange does not fit the server's context ({_size(exc, backend)}) "
        "even shortened. Load the model on the server with a larger context, or give lmc "
        "--context with the size it serves."
    )


def _hide_from_model(loop: Any, start: int) -> None:
    """What the failed generation recorded stays in the conversation, not in the prompt."""
    entries: list[Entry] = loop.transcript.entries
    for index in range(start, len(entries)):
        entry = entries[index]
        if entry.harmony:
            hidden = Entry(entry.message, "", entry.meta)
            entries[index] = hidden
            loop._replace_hook(index, hidden)


def _recount_if_recalibrated(loop: Any) -> None:
    """The server's counts moved the estimate: the per-message counts kept are stale."""
    calibration = getattr(loop._backend(), "calibration", None)
    revision = getattr(calibration, "revision", None)
    if revision is not None and revision != getattr(loop, "_counted_revision", None):
        loop._counted_revision = revision
        loop._token_counts.clear()


def _said_if_cut(loop: Any) -> Iterator[Chunk]:
    """A server that cuts in silence (Ollama) counted far fewer tokens than lmc sent: it cut
    the conversation. Said in one line; lmc works against what it kept from then on."""
    backend = loop._backend()
    calibration: Any = getattr(backend, "calibration", None)
    cut = getattr(calibration, "cut", None)
    if cut is None or not backend.cuts_silently:
        return
    calibration.cut = None
    kept, sent = cut
    size = backend.context_size
    # It served at least what it kept; Ollama's default is a floor worth assuming.
    smaller = max(kept, min(size, OLLAMA_DEFAULT))
    if smaller < size:
        backend.context_size = smaller
        backend.context_reason = (
            f"{smaller:,} tokens (the server cut a prompt of about {sent:,} tokens to {kept:,})"
        )
    yield from loop.notice(
        f"The server counted {kept:,} tokens of a prompt of about {sent:,}: it cut the "
        f"conversation to fit a context smaller than the {size:,} tokens lmc worked against, "
        "and the model did not see all of it. lmc now compacts below "
        f"{backend.context_size:,}; set --context (or the server's context) to what it serves."
    )
