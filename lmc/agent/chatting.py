"""The Interpreter's turns: :meth:`chat` (streamed or not), who decides about each block, the
person's audio heard before the turn, and the kernels started ahead of need.

A mixin of :class:`lmc.agent.interpreter.Interpreter`, kept apart so that each module has one
job; the attributes it uses are the Interpreter's.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Literal, overload

from lmc.agent.approvals import Answer
from lmc.agent.display import PlainRenderer, Renderer
from lmc.agent.history import user_harmony
from lmc.agent.loop import ComputerLike, Decide, Loop
from lmc.errors import ConfigError, InterpreterClosedError, LmcError
from lmc.messages import Block, Chunk, Message, validate_message

if TYPE_CHECKING:
    from lmc.computer import Computer
    from lmc.mcp.tools import McpTools

__all__ = ["PRESTART", "ChatMixin", "Confirm", "prestart_languages"]

#: What ``chat(confirm=...)`` is given: the block about to run; it answers (see
#: :mod:`lmc.agent.approvals`).
Confirm = Callable[[Block], Answer]

#: Kernels started ahead of need: the shell's (a Python wrapper around bash, ~11 MB and a few
#: hundredths of a second) so a shell block runs without waiting for its kernel. The python
#: kernel (ipykernel: ~37 MB and a few tenths of a second of CPU beside lmc's own start) boots
#: when the model begins a python block, while it writes the code (``Loop._warm_kernel``), or
#: ahead when the conversation already ran python (:func:`prestart_languages`).
PRESTART = ("shell",)


def prestart_languages(messages: list[Message]) -> list[str]:
    """:data:`PRESTART`, then the languages of the conversation's earlier code blocks (a
    conversation that ran python is likely to again), without repeats."""
    used = (m.get("format") for m in messages if m.get("type") == "code")
    return list(dict.fromkeys([*PRESTART, *(str(f) for f in used if f)]))


class ChatMixin:
    """Turns for the Interpreter."""

    _loop: Loop
    _cancel: threading.Event
    _busy: threading.Lock
    _turn_thread: int | None
    _active: weakref.ref[Generator[Chunk, None, None]] | None
    auto_run: bool
    renderer: Renderer | None
    stt_model: str | None
    tools: McpTools | None

    @property
    def messages(self) -> list[Message]:  # the Interpreter's
        raise NotImplementedError

    @property
    def computer(self) -> Computer | ComputerLike:  # the Interpreter's
        raise NotImplementedError

    def _check_open(self) -> None:  # the Interpreter's
        raise NotImplementedError

    @overload
    def chat(
        self,
        message: str | Message,
        stream: Literal[True],
        display: bool = ...,
        confirm: Confirm | None = ...,
    ) -> Generator[Chunk, None, None]: ...

    @overload
    def chat(
        self,
        message: str | Message,
        stream: Literal[False] = ...,
        display: bool = ...,
        confirm: Confirm | None = ...,
    ) -> list[Message]: ...

    def chat(
        self,
        message: str | Message,
        stream: bool = False,
        display: bool = True,
        confirm: Confirm | None = None,
    ) -> Generator[Chunk, None, None] | list[Message]:
        """One turn: stream LMC chunks (``stream=True``) or return the new messages.

        An ``audio`` message (WAV as base64) is transcribed first: the transcript comes out as
        the person's message chunks (start, content, end), then the turn goes on as if it had
        been typed, and it is stored as that message (and, unstreamed, returned first).
        """
        if isinstance(message, str):
            user: Message = {"role": "user", "type": "message", "content": message}
        else:
            user = validate_message(message)
            if user["role"] != "user":
                raise ConfigError("chat() takes the person's message (role 'user')")
        renderer: Renderer | None = None
        if display:
            renderer = self.renderer if self.renderer is not None else PlainRenderer()
        audio = self._audio_of(user)
        self._finish_abandoned_turn()
        chunks = self._turn(user, self._decider(confirm, stream, renderer), renderer, audio)
        self._active = weakref.ref(chunks)
        if stream:
            return chunks
        # After the person's message, unless it was heard: then its transcript is news.
        start = len(self.messages) + (1 if audio is None else 0)
        try:
            for _chunk in chunks:
                pass
        finally:
            chunks.close()  # a Ctrl-C between two chunks still leaves the history consistent
        return self.messages[start:]

    def _finish_abandoned_turn(self) -> None:
        """Close a stream its consumer left suspended (say after catching Ctrl-C), so that
        its clean-up runs before the next turn starts."""
        ref, self._active = self._active, None
        active = ref() if ref is not None else None
        if active is not None:
            try:
                active.close()
            except ValueError as exc:  # it is running, in another thread
                self._active = ref
                raise LmcError("this Interpreter is already in a chat; one turn at a time") from exc

    def _decider(self, confirm: Confirm | None, stream: bool, renderer: Renderer | None) -> Decide:
        def decide(block: Block) -> Answer:
            if self.auto_run:
                return True
            if confirm is not None:
                return confirm(block)
            if stream:
                return True  # the consumer asked for the next chunk: that is the consent
            ask = getattr(renderer, "confirm", None)
            if ask is not None:
                answer: Answer = ask(block)
                return answer
            return False  # nobody to ask: nothing runs

        return decide

    def _turn(
        self, user: Message, decide: Decide, renderer: Renderer | None, audio: bytes | None
    ) -> Generator[Chunk, None, None]:
        self._check_open()
        if not self._busy.acquire(blocking=False):
            raise LmcError("this Interpreter is already in a chat; one turn at a time")
        self._turn_thread = threading.get_ident()
        try:
            yield from self._open_turn(user, decide, renderer, audio)
        except InterpreterClosedError:
            pass  # close() began during the turn: it ends here, quietly, as on cancel()
        finally:
            self._turn_thread = None
            self._busy.release()

    def _open_turn(
        self, user: Message, decide: Decide, renderer: Renderer | None, audio: bytes | None
    ) -> Generator[Chunk, None, None]:
        self._prestart()
        heard: list[Chunk] = []
        if audio is not None:
            text = self._hear(audio)
            if text is None:
                return  # cancelled while listening: nothing was said, nothing stored
            user = {"role": "user", "type": "message", "content": text}
            heard = [
                {"role": "user", "type": "message", "start": True},
                {"role": "user", "type": "message", "content": text},
                {"role": "user", "type": "message", "end": True},
            ]
        harmony = user_harmony(user["content"]) if user["type"] == "message" else None
        turn = self._loop.turn(user, harmony or "", decide)
        try:
            for chunk in itertools.chain(heard, turn):
                if renderer is not None:
                    renderer.feed(chunk)
                yield chunk
        finally:
            turn.close()
            if renderer is not None:
                renderer.close()

    @staticmethod
    def _audio_of(user: Message) -> bytes | None:
        """The WAV bytes of an audio message (checked now: bad audio fails before the turn)."""
        if user["type"] != "audio":
            return None
        from lmc.voice.audio import wav_from_base64

        return wav_from_base64(user["content"])

    def _hear(self, audio: bytes) -> str | None:
        """The transcript of ``audio``; None when :meth:`cancel` was called meanwhile."""
        from lmc.voice import transcribe_wav

        self._cancel.clear()
        text = transcribe_wav(audio, self.stt_model, cancel=self._cancel)
        return None if self._cancel.is_set() else text

    def prestart(self) -> None:
        """Start the kernels of :data:`PRESTART` (and the MCP servers) now, in the background:
        call it before :meth:`load` and they boot while the model opens (``lmc run`` does)."""
        self._prestart()

    def _prestart(self) -> None:
        """Start the kernels the model writes for most (:data:`PRESTART`) and the MCP
        servers in the background, while the model loads and writes."""
        if self.tools is not None:
            self.tools.start()
        prestart = getattr(self.computer, "prestart", None)
        if prestart is not None:
            # Launched now, connected when the model begins a block (see Loop._warm_kernel).
            prestart(prestart_languages(self.messages), connect=False)
