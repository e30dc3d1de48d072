"""One websocket client: its Interpreter, its turns, its confirmations.

The agent loop is synchronous: each turn runs in a worker thread (``anyio.to_thread``, in
the connection's task group, on a limiter shared by the server). Its chunks go into a
thread-safe queue without waiting; one sender task, woken once per batch, writes them to
the socket in order. A code block waiting for confirmation waits in the event loop
(``anyio.from_thread.run``) for the client's ``go`` / ``decline`` / ``stop``, at most
``confirm_timeout`` seconds (then it is declined and the client told so). Stopping a turn
cancels the Interpreter (the model stops within a token, running code is interrupted),
leaves the model queue if it waits there, and declines a pending block, so every turn ends
and reports ``complete``; whatever completed before is already stored.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias, TypedDict

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.abc import TaskGroup

from lmc.errors import LmcError
from lmc.messages import Block, Chunk, Message
from lmc.server.inbound import (
    Action,
    Begin,
    Command,
    Inbound,
    Problem,
    UserAudio,
    UserText,
)
from lmc.terminal.json_lines import chunk_json

__all__ = ["COMPLETE", "QUEUED", "Connection", "Frame", "ServerFrame", "error_chunk", "safe_json"]

log = logging.getLogger("lmc.server")

#: How long a client that left waits for its stopped turn before its kernels are closed.
_CLOSE_PATIENCE = 30.0


class ServerFrame(TypedDict):
    """The server's own frames (a turn's status, an error, the conversation's id): the
    protocol's, not LMC chunks, so they have a role of their own."""

    role: Literal["server"]
    type: Literal["status", "error", "conversation"]
    content: str


#: What the server sends: the turn's chunks and its own frames.
Frame: TypeAlias = Chunk | ServerFrame

COMPLETE: ServerFrame = {"role": "server", "type": "status", "content": "complete"}
QUEUED: ServerFrame = {"role": "server", "type": "status", "content": "queued"}


def error_chunk(text: str) -> ServerFrame:
    line = " ".join(str(text).split()) or "error"
    return {"role": "server", "type": "error", "content": line}


def conversation_chunk(conversation_id: str) -> ServerFrame:
    """Which stored conversation this connection writes to (lmc's addition to the protocol)."""
    return {"role": "server", "type": "conversation", "content": conversation_id}


def safe_json(chunk: Frame) -> str:
    """The chunk as a text frame; escaped when it holds text UTF-8 cannot carry (a lone
    surrogate), which would otherwise fail in the middle of the socket's send."""
    frame = chunk_json(chunk)
    try:
        frame.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(chunk, ensure_ascii=True)
    return frame


def _starts_work(chunk: Chunk) -> bool:
    """The model writing, or code starting to run."""
    return chunk["role"] == "assistant" or (chunk["type"] == "console" and "start" in chunk)


def describe(exc: BaseException) -> str:
    if isinstance(exc, LmcError):
        return f"{exc} ({exc.hint})" if exc.hint else str(exc)
    return f"unexpected error: {type(exc).__name__}: {exc}"


def _threadsafe_caller() -> Callable[[Callable[[], None]], None]:
    """How a turn's thread schedules a call on the event loop. anyio's ``from_thread``
    waits until the loop has run it, which holds a generation (and the shared model) for a
    loop round-trip per batch; on asyncio (uvicorn's loop) the loop's own thread-safe call
    does not wait."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another backend (trio)

        def waiting(call: Callable[[], None]) -> None:
            anyio.from_thread.run_sync(call)

        return waiting

    def soon(call: Callable[[], None]) -> None:
        loop.call_soon_threadsafe(call)

    return soon


class Connection:
    """A client's session after it authenticated, living in the task group ``group``."""

    def __init__(
        self,
        interpreter: Any,
        send: Callable[[str], Awaitable[None]],
        group: TaskGroup,
        *,
        auto_run: bool,
        stop_waiting: Callable[[], None] = lambda: None,
        max_bytes: int | None = None,
        confirm_timeout: float = 3600.0,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.interpreter = interpreter
        self._send = send
        self._group = group
        self._auto_run = auto_run
        self._stop_waiting = stop_waiting
        self._confirm_timeout = confirm_timeout
        self._limiter = limiter
        self._inbound = Inbound() if max_bytes is None else Inbound(max_bytes)
        self._loop_thread = threading.get_ident()
        # Frames for the client: a turn's thread puts them here without waiting, and wakes
        # the sender only when it is idle (one hand-off per batch, not per chunk).
        self._frames: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._wakes_in, self._wakes = anyio.create_memory_object_stream[None](1)
        self._call_soon = _threadsafe_caller()
        self._answer_in, self._answers = anyio.create_memory_object_stream[bool](math.inf)
        self._awaiting = threading.Event()  # a code block waits for go/decline
        self._stopping = threading.Event()
        self._turn: anyio.Event | None = None  # set when the running turn has ended
        self._told_id = interpreter.conversation_id
        group.start_soon(self._send_all)

    # -- to the client ------------------------------------------------------------------------

    async def _send_all(self) -> None:
        async with self._wakes:
            async for _ in self._wakes:
                with self._wake_lock:
                    self._wake_pending = False  # before draining: a later frame wakes again
                while True:
                    try:
                        frame = self._frames.get_nowait()
                    except queue.Empty:
                        break
                    if frame is None:
                        return
                    try:
                        await self._send(frame)
                    except Exception as exc:  # the client is gone: the receive side cleans up
                        log.debug("a client left while chunks were sent: %s", exc)
                        return

    def emit(self, chunk: Frame) -> None:
        """Queue a chunk for the client (from the event loop or from a turn's thread)."""
        self._put(safe_json(chunk))

    def _put(self, frame: str | None) -> None:
        self._frames.put(frame)
        with self._wake_lock:
            if self._wake_pending:
                return  # the sender has been woken and will drain this frame too
            self._wake_pending = True
        try:
            if threading.get_ident() == self._loop_thread:
                self._wakes_in.send_nowait(None)
            else:
                self._call_soon(self._wake_from_thread)
        except (RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server or the client is gone: nobody is there to read it

    def _wake_from_thread(self) -> None:
        try:
            self._wakes_in.send_nowait(None)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the connection closed meanwhile

    def queued(self) -> None:
        """Called (in a turn's thread) when this client has to wait for the model or for a
        free kernel."""
        self.emit(QUEUED)

    # -- from the client ----------------------------------------------------------------------

    async def text(self, frame: str) -> None:
        await self._act(self._inbound.text(frame))

    async def binary(self, frame: bytes) -> None:
        await self._act(self._inbound.binary(frame))

    async def _act(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Problem):
                self.emit(error_chunk(action.text))
            elif isinstance(action, Begin):
                await self.stop_turn()
            elif isinstance(action, Command):
                self._command(action.name)
            elif isinstance(action, UserText):
                if not action.text.strip():
                    self.emit(error_chunk("the message is empty"))
                else:
                    self._start({"role": "user", "type": "message", "content": action.text})
            elif isinstance(action, UserAudio):
                content = base64.b64encode(action.wav).decode("ascii")
                self._start({"role": "user", "type": "audio", "format": "wav", "content": content})

    def _command(self, name: str) -> None:
        if name == "stop":
            if self._turn is not None and not self._turn.is_set():
                self._request_stop()
            return
        if not self._awaiting.is_set():
            self.emit(error_chunk(f"{name}: no code is waiting for confirmation"))
            return
        self._awaiting.clear()
        self._answer_in.send_nowait(name == "go")

    # -- turns --------------------------------------------------------------------------------

    def _start(self, message: Message) -> None:
        self._stopping.clear()
        done = anyio.Event()
        self._turn = done

        async def turn() -> None:
            try:
                await anyio.to_thread.run_sync(
                    self._run_turn, message, limiter=self._limiter, abandon_on_cancel=True
                )
            finally:
                done.set()

        self._group.start_soon(turn)

    def _run_turn(self, message: Message) -> None:
        try:
            stream = self.interpreter.chat(
                message, stream=True, display=False, confirm=self._confirm
            )
            try:
                for chunk in stream:
                    if chunk["type"] == "confirmation" and not self._auto_run:
                        self._awaiting.set()  # before the client can see it and answer
                    elif self._stopping.is_set() and _starts_work(chunk):
                        # The stop came before the turn began (which clears the Interpreter's
                        # cancel flag): the model writes or new code starts; stop it again.
                        self.interpreter.cancel()
                    self.emit(chunk)
                    self._tell_conversation()
            finally:
                stream.close()
        except Exception as exc:
            if not isinstance(exc, LmcError):
                log.exception("turn failed")
            self.emit(error_chunk(describe(exc)))
        finally:
            self._awaiting.clear()
            self._tell_conversation()
            self.emit(COMPLETE)

    def _tell_conversation(self) -> None:
        """Name the stored conversation as soon as it exists (the page lists it at once)."""
        conversation_id = self.interpreter.conversation_id
        if conversation_id is not None and conversation_id != self._told_id:
            self._told_id = conversation_id
            self.emit(conversation_chunk(conversation_id))

    def _confirm(self, block: Block) -> bool:
        """Runs in the turn's thread: waits for the client's answer (or the turn's stop)."""
        if self._auto_run:
            return True
        if self._stopping.is_set():
            return False
        try:
            return bool(anyio.from_thread.run(self._answer))
        except RuntimeError:  # the event loop is gone: nobody can answer
            return False

    async def _answer(self) -> bool:
        with anyio.move_on_after(self._confirm_timeout):
            return await self._answers.receive()
        self._awaiting.clear()
        self.emit(
            error_chunk(
                f"no answer within {self._confirm_timeout:g} s: the code was declined, nothing ran"
            )
        )
        return False

    def _request_stop(self) -> None:
        self._stopping.set()
        self.interpreter.cancel()
        self._stop_waiting()
        if self._awaiting.is_set():
            self._awaiting.clear()
            self._answer_in.send_nowait(False)

    async def stop_turn(self, patience: float | None = None) -> None:
        """Stop the running turn, if any, and wait until it has ended (at most ``patience``
        seconds: then it is left to end when :meth:`close` frees its kernels)."""
        turn = self._turn
        if turn is None:
            return
        if not turn.is_set():
            self._request_stop()
            with anyio.move_on_after(math.inf if patience is None else patience):
                await turn.wait()
            if not turn.is_set():
                log.warning("a stopped turn did not end within %s s; closing its kernels", patience)
                return
        self._turn = None
        self._drain_answers()

    def _drain_answers(self) -> None:
        while True:
            try:
                self._answers.receive_nowait()
            except anyio.WouldBlock:
                return

    async def wait_turn(self) -> None:
        if self._turn is not None:
            await self._turn.wait()

    async def close(self) -> None:
        """The client left (or the server stops): stop the turn, flush, free the kernels."""
        with anyio.CancelScope(shield=True):
            await self.stop_turn(patience=_CLOSE_PATIENCE)
            self._put(None)
            await anyio.to_thread.run_sync(self.interpreter.close)
            self._answer_in.close()
