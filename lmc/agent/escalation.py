"""Running a blocked block once more with what the sandbox denied it, on the person's yes.

When a block failed because of the sandbox (the computer's ``last_run_lacked``: the network,
or being outside the sandbox), the :data:`OfferRerun` callback is asked whether to run that
one block again in a throwaway kernel that has it (:meth:`lmc.Computer.run_relaxed`). So a
``%pip install`` or a download needs no restart, and the sandbox stays strict for the blocks
after it. Only the interactive terminal sets the callback (never ``-y``, ``--json``,
``lmc serve`` or ``lmc mcp serve``). On a yes the person and the model are told in one line,
and the model reads the re-run's output instead of the blocked one. A block re-run with the
network that then runs into a refused write (``pip install``) may be offered once more,
without the sandbox; a block re-run without the sandbox lacks nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Final, Protocol

from lmc.messages import Block, Chunk, CodeChunk, CodeFormat, Message

if TYPE_CHECKING:
    from lmc.agent.tools import ToolTarget

__all__ = ["OfferRerun", "rerun_if_allowed", "rerun_line"]

#: Called with the code block (``{"type": "code", "format": LANG, "content": CODE}``) and what
#: it lacked (``"network"`` or ``"unsandboxed"``); True runs it once more with that.
OfferRerun = Callable[[Block, str], bool]

WITH: Final = {"network": "with the network", "unsandboxed": "without the sandbox"}


class _RunOutput(Protocol):
    def finish(self) -> list[Message]: ...


class _Loop(Protocol):
    """What this needs of :class:`lmc.agent.loop.Loop` (which imports this module)."""

    def _computer(self) -> Any: ...

    def record(self, message: Message, harmony: str) -> int: ...

    def record_run(self, target: ToolTarget, output: Any, told: str) -> None: ...

    def notice(self, text: str, harmony: str = "") -> Iterator[Chunk]: ...

    def _run(
        self,
        target: ToolTarget,
        language: CodeFormat,
        code: str,
        told: str,
        rerun: Iterable[Chunk] | None = None,
    ) -> Iterator[Chunk]: ...


def rerun_line(language: str, lacked: str) -> str:
    """The one line that tells the person and the model what happened."""
    return (
        f"The user let this block run again {WITH.get(lacked, lacked)}, once, in a fresh "
        f"{language} kernel (earlier variables and imports are not there in it); later blocks "
        "run in the sandbox as before."
    )


def rerun_if_allowed(
    loop: _Loop,
    offer: OfferRerun,
    *,
    target: ToolTarget,
    language: CodeFormat,
    code: str,
    output: _RunOutput,
    told: str,
) -> Generator[Chunk, None, bool]:
    """Offer the re-run of the block that just ran; on a yes, record the blocked run for the
    person only, run it again (recorded as the call's result) and return True. False when
    nothing was offered or the answer was no: the caller records the run as usual."""
    computer = loop._computer()
    lacked = getattr(computer, "last_run_lacked", None)
    run_relaxed = getattr(computer, "run_relaxed", None)
    if lacked not in WITH or run_relaxed is None:
        return False
    try:
        allowed = offer({"type": "code", "format": language, "content": code}, lacked)
    except BaseException:
        loop.record_run(target, output, told)  # Ctrl-C while asking: the blocked run stands
        raise
    if not allowed:
        return False
    for message in output.finish():
        loop.record(message, "")  # the person saw it; the model reads the re-run instead
    line = rerun_line(language, lacked)
    yield from loop.notice(line)
    # The code again above its new output, so that a renderer shows the output as the code's
    # (console output after a note reads as lmc's words). The transcript holds it once.
    yield from _code_chunks(language, code)
    rerun = run_relaxed(language, code, lacked)
    yield from loop._run(target, language, code, f"{told}{line}\n\nOutput:\n", rerun)
    return True


def _code_chunks(language: CodeFormat, code: str) -> list[CodeChunk]:
    base: CodeChunk = {"role": "assistant", "type": "code", "format": language}
    return [{**base, "start": True}, {**base, "content": code}, {**base, "end": True}]
