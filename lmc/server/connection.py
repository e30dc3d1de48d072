"""One websocket client: its Interpreter, its turns, its confirmations.

The agent loop is synchronous, so each turn runs in a thread of its own and its chunks cross
to the event loop through an asyncio queue; one sender task writes them in order. A code
block waiting for confirmation blocks that thread on a queue of answers, which the client's
``go`` / ``decline`` / ``stop`` commands (or its leaving) fill. Stopping a turn cancels the
Interpreter (the model stops within a token, running code is interrupted), leaves the model
queue if it waits there, and declines a pending block, so every turn ends and reports
``complete``; whatever completed before is already stored.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from lmc.errors import LmcError
from lmc.messages import Chunk, Message
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

__all__ = ["COMPLETE", "QUEUED", "Connection", "error_chunk"]

log = logging.getLogger("lmc.server")

#: How long a client that left waits for its stopped turn before its kernels are closed.
_CLOSE_PATIENCE = 30.0

COMPLETE: Chunk = {"role": "server", "type": "status", "content": "complete"}
QUEUED: Chunk = {"role": "server", "type": "status", "content": "queued"}


def error_chunk(text: str) -> Chunk:
    line = " ".join(str(text).split()) or "error"
    return {"role": "server", "type": "error", "content": line}


def conversation_chunk(conversation_id: str) -> Chunk:
    """Which stored conversation this connection writes to (lmc's addition to the protocol)."""
    return {"role": "server", "type": "conversation", "content": conversation_id}


def _starts_work(chunk: Chunk) -> bool:
    """The model writing, or code starting to run."""
    return chunk.get("role") == "assistant" or (
        chunk.get("type") == "console" and bool(chunk.get("start"))
    )


def describe(exc: BaseException) -> str:
    if isinstance(exc, LmcError):
        return f"{exc} ({exc.hint})" if exc.hint else str(exc)
    return f"unexpected error: {type(exc).__name__}: {exc}"


class Connection:
    """A client's session after it authenticated; :meth:`serve` runs until it leaves."""

    def __init__(
        self,
        interpreter: Any,
        send: Callable[[str], Any],
        *,
        auto_run: bool,
        stop_waiting: Callable[[], None] = lambda: None,
        max_bytes: int | None = None,
    ) -> None:
        self.interpreter = interpreter
        self._send = send  # async: one text frame to the client
        self._auto_run = auto_run
        self._stop_waiting = stop_waiting
        self._inbound = Inbound() if max_bytes is None else Inbound(max_bytes)
        self._loop = asyncio.get_running_loop()
        self._out: asyncio.Queue[str | None] = asyncio.Queue()
        self._answers: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._awaiting = threading.Event()  # a code block waits for go/decline
        self._stopping = threading.Event()
        self._turn: asyncio.Future[None] | None = None
        self._told_id = interpreter.conversation_id
        self._sender = asyncio.create_task(self._send_all())

    # -- to the client ------------------------------------------------------------------------

    async def _send_all(self) -> None:
        while (frame := await self._out.get()) is not None:
            try:
                await self._send(frame)
            except Exception:  # the client is gone: the receive side notices and cleans up
                return

    def emit(self, chunk: Chunk) -> None:
        """Queue a chunk for the client (from any thread)."""
        frame = chunk_json(chunk)
        try:
            self._loop.call_soon_threadsafe(self._out.put_nowait, frame)
        except RuntimeError:  # the event loop is closed: the server is gone
            pass

    def queued(self) -> None:
        """Called by the model gate when this client's generation has to wait its turn."""
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
            if self._turn is not None and not self._turn.done():
                self._request_stop()
            return
        if not self._awaiting.is_set():
            self.emit(error_chunk(f"{name}: no code is waiting for confirmation"))
            return
        self._awaiting.clear()
        self._answers.put(name == "go")

    # -- turns --------------------------------------------------------------------------------

    def _start(self, message: Message) -> None:
        self._stopping.clear()
        done: asyncio.Future[None] = self._loop.create_future()
        self._turn = done

        def finished() -> None:
            if not done.done():
                done.set_result(None)

        def work() -> None:
            try:
                self._run_turn(message)
            finally:
                self._loop.call_soon_threadsafe(finished)

        threading.Thread(target=work, name="lmc-serve-turn", daemon=True).start()

    def _run_turn(self, message: Message) -> None:
        try:
            stream = self.interpreter.chat(
                message, stream=True, display=False, confirm=self._confirm
            )
            try:
                for chunk in stream:
                    if chunk.get("type") == "confirmation" and not self._auto_run:
                        self._awaiting.set()  # before the client can see it and answer
                    elif self._stopping.is_set() and _starts_work(chunk):
                        # The stop came before the turn began (which clears the Interpreter's
                        # cancel flag): the model writes or new code starts; stop it again.
                        self.interpreter.cancel()
                    self.emit(chunk)
            finally:
                stream.close()
        except Exception as exc:
            if not isinstance(exc, LmcError):
                log.exception("turn failed")
            self.emit(error_chunk(describe(exc)))
        finally:
            self._awaiting.clear()
            conversation_id = self.interpreter.conversation_id
            if conversation_id is not None and conversation_id != self._told_id:
                self._told_id = conversation_id
                self.emit(conversation_chunk(conversation_id))
            self.emit(COMPLETE)

    def _confirm(self, block: dict[str, Any]) -> bool:
        """Runs in the turn's thread: blocks until the client answers (or the turn stops)."""
        if self._auto_run:
            return True
        if self._stopping.is_set():
            return False
        return self._answers.get()

    def _request_stop(self) -> None:
        self._stopping.set()
        self.interpreter.cancel()
        self._stop_waiting()
        if self._awaiting.is_set():
            self._awaiting.clear()
            self._answers.put(False)

    async def stop_turn(self, patience: float | None = None) -> None:
        """Stop the running turn, if any, and wait until it has ended (at most ``patience``
        seconds: then it is left to end when :meth:`close` frees its kernels)."""
        turn = self._turn
        if turn is None:
            return
        if not turn.done():
            self._request_stop()
            try:
                await asyncio.wait_for(asyncio.shield(turn), patience)
            except TimeoutError:
                log.warning("a stopped turn did not end within %s s; closing its kernels", patience)
                return
        self._turn = None
        self._drain_answers()

    def _drain_answers(self) -> None:
        while True:
            try:
                self._answers.get_nowait()
            except queue.Empty:
                return

    async def wait_turn(self) -> None:
        if self._turn is not None:
            await self._turn

    async def close(self) -> None:
        """The client left (or the server stops): stop the turn, flush, free the kernels."""
        await self.stop_turn(patience=_CLOSE_PATIENCE)
        self._out.put_nowait(None)
        try:
            await self._sender
        except Exception:
            pass
        await asyncio.to_thread(self.interpreter.close)
