"""The agent loop: sample, show, confirm, run, feed back, sample again.

One turn starts with the person's message and ends with a final answer, a stop (step limit,
token limit, full context, cancellation) or a failure reported as a note. Everything it does
comes out as LMC chunks in the order of the seed's streaming response, and every completed
message is recorded (and so stored) before the next step starts.

Stopping early is always safe. The turn is a generator, so a consumer that stops asking for
chunks (``break``, ``close()``) or a ``KeyboardInterrupt`` raised while it samples or runs
lands in one of the ``except BaseException`` blocks here: the partial message is kept, a
running kernel is interrupted, a pending call is recorded as not run, and the exception goes
on to the caller. The transcript is consistent again before it does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from lmc.agent.approvals import Answer, Decision, decision_of, refusal_text
from lmc.agent.history import Entry, Transcript, tool_result_harmony
from lmc.agent.loop_guard import LoopGuard
from lmc.agent.run_output import (
    PendingCall,
    RunOutput,
    console_chunks,
    note_chunks,
    note_message,
    output_message,
)
from lmc.agent.sampling import Outcome, Sampler
from lmc.agent.served_retry import sample_served
from lmc.agent.tool_calls import TOOL_DECLINED, ExternalTools, run_tool_call
from lmc.agent.tools import DECLINED, ToolCallError, ToolTarget, code_from_call, resolve_call
from lmc.backends.base import Backend, Generation, SamplingSettings, StopReason
from lmc.errors import ContextOverflowError, LmcError
from lmc.messages import (
    Block,
    Chunk,
    CodeFormat,
    Message,
    confirmation_chunk,
    flag_of,
)

if TYPE_CHECKING:
    from lmc.agent.compaction import Compactor
    from lmc.agent.escalation import OfferRerun

__all__ = ["BlockHooks", "ComputerLike", "Decide", "Loop", "LoopSettings"]

#: Called with the block ``{"type": "code", "format": LANG, "content": CODE}`` (or a
#: ``tool_call``) before it runs: True runs it, False declines, ``Declined(reason)`` declines
#: and tells the model why, a string runs that (edited) code instead.
Decide = Callable[[Block], Answer]


class BlockHooks(Protocol):
    """Called around each code block (checkpoints: :class:`lmc.agent.checkpoints.Checkpointer`)."""

    def before_block(self) -> str | None:
        """Before the block runs; a note for the person, or None."""

    def after_block(self) -> Message | None:
        """After it ran (or was interrupted); a message to show and keep, or None."""

    def after_note(self) -> str | None:
        """After :meth:`after_block`: a note for the person (what the checkpoint left out)."""


class ComputerLike(Protocol):
    """What the loop needs of :class:`lmc.Computer`."""

    def run(self, language: str, code: str) -> Iterable[Chunk]: ...

    def interrupt(self) -> None: ...


@dataclass(slots=True)
class LoopSettings:
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    max_steps: int = 20
    #: Characters of a run's output the model reads (head and tail).
    output_limit: int = 6_000
    #: Characters of a run's output kept in the history (the person saw all of it live).
    history_output_limit: int = 100_000
    #: Tokens kept free for the answer when the prompt is trimmed (max_tokens when set).
    answer_reserve: int = 1024


#: How the note that ends a turn at the step limit begins (the chat offers to go on).
STEP_LIMIT: Final = "Stopped at the step limit"


def step_limit_note(calls: int) -> str:
    """Why a turn stopped at the step limit, naming the limit and how to raise it."""
    return (
        f"{STEP_LIMIT}: {calls} tool call{'s' if calls != 1 else ''} in one "
        "message (max_steps). "
        "Say 'continue' to let the model go on, or raise the limit with --max-steps N "
        "(config: max_steps)."
    )


class Loop:
    """Runs turns over a transcript; ``record``/``replace`` are called as messages complete."""

    def __init__(
        self,
        *,
        backend: Callable[[], Backend],
        computer: Callable[[], ComputerLike],
        transcript: Transcript,
        prefix: Callable[[], str],
        settings: LoopSettings,
        cancel: threading.Event,
        record: Callable[[Entry], None],
        replace: Callable[[int, Entry], None],
        tools: ExternalTools | None = None,
        usage: Callable[[Generation], None] | None = None,
    ) -> None:
        self._backend = backend
        #: Told each finished generation (its token counts).
        self._usage_hook = usage
        #: Tools besides code (MCP servers' tools), called as ``functions.SERVER__TOOL``.
        self.tools = tools
        self._computer = computer
        self.transcript = transcript
        self._prefix = prefix
        self.settings = settings
        self._cancel = cancel
        #: Set when the turn is to stop (Ctrl-C, Interpreter.cancel).
        self.cancelled = cancel
        self._record_hook = record
        self._replace_hook = replace
        #: Oldest turns left out of the prompt to fit the context (kept stable so that the
        #: prompt keeps extending the one before it).
        self.dropped_turns = 0
        self._trim_told = False
        self.running = False  # a kernel is running code for this loop
        #: Called before and after each code block (checkpoints of the working directory).
        self.block_hooks: BlockHooks | None = None
        #: Summarises older messages near the context size (None: the oldest turns are left
        #: out instead, with a note).
        self.compactor: Compactor | None = None
        #: Asked, when the sandbox blocked a block, whether to run it again with what it
        #: lacked (:mod:`lmc.agent.escalation`); only the interactive terminal sets it.
        self.offer_rerun: OfferRerun | None = None
        self._token_counts: dict[str, int] = {}  # a message's Harmony text -> its tokens
        #: Tells the model it repeats itself, then ends the turn (lmc.agent.loop_guard).
        self.guard = LoopGuard()

    def forget(self) -> None:
        """A new conversation: no turns dropped, and the context note may be given again."""
        self.transcript.entries.clear()
        self.dropped_turns = 0
        self._trim_told = False

    # -- recording ---------------------------------------------------------------------------

    def record(self, message: Message, harmony: str) -> int:
        entry = Entry(message, harmony)
        self.transcript.entries.append(entry)
        self._record_hook(entry)
        return len(self.transcript.entries) - 1

    def notice(self, text: str, harmony: str = "") -> Iterator[Chunk]:
        """Tell the person something in lmc's own words (with ``harmony``, the model too).

        A computer ``message``, not console output, so a renderer can tell lmc's notes from
        what code printed.
        """
        text = text.rstrip("\n")
        self.record(note_message(text), harmony)
        yield from note_chunks(text)

    def confirm(
        self, target: ToolTarget, block: Block, decide: Decide | None
    ) -> Generator[Chunk, None, Decision]:
        """The one confirmation path, for code blocks and tool calls alike.

        Yields the confirmation chunk, asks ``decide`` (None: run without asking) and, when
        the answer is no, records and shows the refusal with the person's reason. A consumer
        that stops at the confirmation (or Ctrl-C while asking) leaves the call declined.
        """
        declined = TOOL_DECLINED if block["type"] == "tool_call" else DECLINED
        try:
            yield confirmation_chunk(block)
            decision = Decision(True) if decide is None else decision_of(decide(block))
        except BaseException:
            self.record(output_message(declined + "\n"), self.result(target, declined))
            raise
        if not decision.run:
            text = refusal_text(declined, decision.reason)
            self.record(output_message(text + "\n"), self.result(target, text))
            yield from console_chunks(text + "\n")
        return decision

    # -- the turn ----------------------------------------------------------------------------

    def turn(
        self, message: Message, harmony: str, decide: Decide | None
    ) -> Generator[Chunk, None, None]:
        """One turn for the person's ``message``; yields LMC chunks."""
        self._cancel.clear()
        self.guard.reset()
        self.record(message, harmony)
        if self.tools is not None:
            for line in self.tools.notices():  # a tool server that did not start, said once
                yield from self.notice(line)
        calls = 0
        while True:
            prompt = yield from self._prompt()
            if prompt is None:
                return
            outcome = yield from sample_served(self, prompt)  # a server's refusal: retried
            if outcome is None:
                return
            if outcome.call is None:
                yield from self._stopped(outcome)
                return
            calls += 1
            yield from self._call(outcome.call, decide)
            if self._cancel.is_set():
                return
            if self.guard.stop_note is not None:
                yield from self.notice(self.guard.stop_note)
                return
            if calls >= self.settings.max_steps:
                yield from self.notice(step_limit_note(calls))
                return

    def _stopped(self, outcome: Outcome) -> Iterator[Chunk]:
        if outcome.returned:
            return
        reason = outcome.stop_reason
        if reason is StopReason.CANCELLED or self._cancel.is_set():
            return
        if reason is StopReason.MAX_TOKENS:
            limit = self.settings.sampling.max_tokens
            yield from self.notice(
                f"Stopped: the model reached the token limit (max_tokens={limit}) "
                "before it finished."
            )
        elif reason is StopReason.CONTEXT_FULL:
            yield from self.notice("Stopped: the model's context is full.")
        else:
            detail = f" ({'; '.join(outcome.problems)})" if outcome.problems else ""
            yield from self.notice(
                f"Stopped: the model's output ended without a final answer or a tool call{detail}."
            )

    # -- the prompt --------------------------------------------------------------------------

    def prompt(self) -> str:
        """The prompt as it stands (for counting tokens)."""
        return "".join(self._prompt_parts())

    def _prompt_parts(self) -> list[str]:
        from lmc.agent.compaction import prompt_parts

        return prompt_parts(self.transcript, self._prefix(), self.dropped_turns, self._bound)

    def prompt_tokens(self, backend: Backend | None = None) -> int:
        """Tokens the prompt takes, counted message by message; each message's count is kept,
        so a step counts only the messages added since the last one."""
        backend = backend or self._backend()
        parts = self._prompt_parts()
        known, counts = self._token_counts, {}
        total = 0
        for part in parts:
            count = known.get(part)
            if count is None:
                count = backend.count_tokens(part) if part else 0
            counts[part] = count
            total += count
        self._token_counts = counts  # forget the messages no longer in the prompt
        return total

    def _bound(self, text: str) -> str:
        from lmc.computer.output import bound_output

        return bound_output(text, self.settings.output_limit)

    def _prompt(self) -> Generator[Chunk, None, str | None]:
        """Render the prompt, summarising older messages (the compactor) or else leaving out
        the oldest turns if it does not fit with the answer's reserve; None if even that does
        not fit (a note says so)."""
        backend = self._backend()
        size = backend.context_size
        reserve = self.settings.sampling.max_tokens or self.settings.answer_reserve
        reserve = min(reserve, size // 4)
        if self.compactor is not None:
            yield from self.compactor.fit(backend, size, reserve)
        turns = self.transcript.turn_count()
        before = self.dropped_turns
        while True:
            used = self.prompt_tokens(backend)
            if used + reserve <= size or self.dropped_turns >= turns - 1:
                break
            self.dropped_turns += 1
        prompt = self.prompt()
        if self.dropped_turns > before and not self._trim_told:
            self._trim_told = True
            yield from self.notice(
                f"The conversation is longer than the model's context ({size} tokens): "
                "the oldest messages are left out of what the model sees from now on."
            )
        if used + reserve > size:  # the answer's room is kept on every step
            yield from self.notice(
                f"Stopped: this exchange no longer fits in the model's context ({used:,} tokens "
                f"of {size:,}, and {reserve:,} kept for the answer). Start a new conversation, or "
                "give the model a larger context (--context N, and as large on the server)."
            )
            return None
        return prompt

    # -- sampling ----------------------------------------------------------------------------

    def _warm_kernel(self, chunks: list[Chunk]) -> None:
        """A code block began: its kernel gets ready while the model writes the code (a
        prestarted kernel connects only then; see :meth:`lmc.computer.Computer.start`),
        and the working directory's checkpoint is taken meanwhile."""
        for chunk in chunks:
            if chunk["type"] == "code" and chunk.get("start") and chunk.get("format"):
                prepare = getattr(self.block_hooks, "prepare", None)  # the checkpoint, too
                if prepare is not None:
                    prepare()
                start = getattr(self._computer(), "start", None)  # a computer of the tests'
                if start is not None:
                    start(str(chunk["format"]))

    def _sample(self, prompt: str) -> Generator[Chunk, None, Outcome]:
        """One generation: stream its chunks, record each message as it ends."""
        sampler = Sampler(self.record)
        backend = self._backend()
        try:
            generation = backend.generate(prompt, self.settings.sampling, self._cancel)
        except ContextOverflowError:
            yield from self.notice(
                "Stopped: this exchange no longer fits in the model's context "
                f"({backend.context_size} tokens)."
            )
            return Outcome(returned=True)
        pieces = iter(generation)
        try:
            for piece in pieces:
                chunks = sampler.feed(piece.text, piece.special)
                self._warm_kernel(chunks)
                yield from chunks
            yield from sampler.finish()
        except BaseException:
            # Ctrl-C, the consumer closing the stream, or a backend failure: keep what the
            # model wrote so far and leave the backend ready for the next call.
            self._cancel.set()
            close = getattr(pieces, "close", None)
            if close is not None:
                close()
            sampler.abandon()
            raise
        outcome = sampler.outcome
        outcome.stop_reason = generation.stop_reason
        if self._usage_hook is not None:
            self._usage_hook(generation)
        return outcome

    # -- calls -------------------------------------------------------------------------------

    def _call(self, call: PendingCall, decide: Decide | None) -> Iterator[Chunk]:
        target = resolve_call(call.header.recipient or "", call.header.channel)
        if self.tools is not None and target.language is None:
            # An MCP tool (functions.SERVER__TOOL), or an unknown tool named with them all.
            yield from run_tool_call(self, self.tools, call, decide)
            return
        try:
            code = code_from_call(target, call.text, call.header.content_type)
        except ToolCallError as exc:
            yield from self.notice(str(exc), call.pending + self.result(target, str(exc)))
            return
        if call.entry is not None:
            # What runs is what the person was shown and what is stored: the code message.
            shown = self.transcript.entries[call.entry].message.get("content")
            code = shown if isinstance(shown, str) else code
        assert target.language is not None
        language = target.language
        block: Block = {"type": "code", "format": language, "content": code}
        decision = yield from self.confirm(target, block, decide)
        if not decision.run:
            return
        told = ""
        if decision.edited is not None and decision.edited != code:
            code = decision.edited
            told = f"The user edited the code before running it. It ran as:\n{code}\n\nOutput:\n"
            self.replace_entry(call.entry, code)
        yield from self._run(target, language, code, told)

    def replace_entry(self, index: int | None, content: str) -> None:
        """The call's shown message now says what really ran (the person's edit)."""
        if index is None:
            return
        entry = self.transcript.entries[index]
        if entry.message["type"] == "code" or entry.message["type"] == "tool_call":
            entry.message["content"] = content
            self._replace_hook(index, entry)

    def result(self, target: ToolTarget, text: str) -> str:
        return tool_result_harmony(target.author, target.channel, text)

    def _run(
        self,
        target: ToolTarget,
        language: CodeFormat,
        code: str,
        told: str,
        rerun: Iterable[Chunk] | None = None,
    ) -> Iterator[Chunk]:
        """Run the block (or stream ``rerun``, its second run) between the block hooks."""
        yield from self.checkpointed(self._run_block(target, language, code, told, rerun), target)

    def checkpointed(
        self, run: Iterator[Chunk], target: ToolTarget | None = None
    ) -> Iterator[Chunk]:
        """``run`` (a code block or a tool call) between the block hooks: the working
        directory's checkpoint before it, the files it changed after it (kept also when the
        run is interrupted or its consumer goes away)."""
        hooks = self.block_hooks
        note = hooks.before_block() if hooks is not None else None
        if note:
            yield from self.notice(note)
        try:
            yield from run
        except BaseException:
            after = hooks.after_block() if hooks is not None else None
            if after is not None:
                self.record(after, "")  # kept, though the stream is gone
            raise
        after = hooks.after_block() if hooks is not None else None
        if after is not None:
            self.record(after, "")
            yield flag_of(after, "start")
            yield after.copy()
            yield flag_of(after, "end")
        note = hooks.after_note() if hooks is not None else None
        if note:
            yield from self.notice(note)
        warn = getattr(hooks, "after_warning", None)  # what the code set up git to run
        warning = warn() if warn is not None else None
        if warning:
            told = self.result(target, warning) if target is not None else ""
            yield from self.notice(warning, told)

    def _run_block(
        self,
        target: ToolTarget,
        language: CodeFormat,
        code: str,
        told: str,
        rerun: Iterable[Chunk] | None = None,
    ) -> Iterator[Chunk]:
        """Run the block (or stream ``rerun``) and record its output."""
        output = RunOutput(self.settings.output_limit, self.settings.history_output_limit)
        chunks = iter(self._computer().run(language, code) if rerun is None else rerun)
        self.running = True
        in_console = False
        try:
            for chunk in chunks:
                output.add(chunk)
                if chunk["type"] == "console" and (chunk.get("start") or chunk.get("end")):
                    in_console = bool(chunk.get("start"))
                yield chunk
        except LmcError as exc:
            # The computer failed (a kernel that cannot start): the model and person are told.
            output.note(f"\n{exc}\n")
            failed = console_chunks(f"{exc}\n")
            yield from failed[1:] if in_console else failed
        except BaseException:
            # Ctrl-C or the consumer closing the stream while code runs: stop the code.
            self._computer().interrupt()
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
            output.note("\n[interrupted]\n")
            self.record_run(target, output, told)
            raise
        finally:
            self.running = False
        if self.offer_rerun is not None:
            from lmc.agent.escalation import rerun_if_allowed

            again = rerun_if_allowed(
                self, self.offer_rerun, target=target, language=language, code=code,
                output=output, told=told,
            )  # fmt: skip
            if (yield from again):
                return
        warning = self.guard.observe(language, code, output.for_model.text())
        if warning is not None:
            output.note(warning)  # in the result the model reads
        self.record_run(target, output, told)
        if warning is not None:
            yield from self.notice(warning.strip())

    def record_run(self, target: ToolTarget, output: RunOutput, told: str) -> None:
        text = output.for_model.text() or "(no output)"
        messages = output.finish()
        for message in messages[:-1]:
            self.record(message, "")
        self.record(messages[-1], self.result(target, told + text))
