"""What a client's frames mean: Open Interpreter's server protocol as a sans-IO reader.

Frames in (:meth:`Inbound.text`, :meth:`Inbound.binary`), actions out. Nothing here touches
a socket, so every rule of the protocol is tested on its own:

- a user message is ``start``, content chunks, ``end`` (``type`` ``message``); one frame with
  ``content`` and neither ``start`` nor ``end`` is a whole message;
- audio is the same with ``type`` ``audio`` and ``format`` ``wav``; its content is binary
  frames or base64 ``content`` strings; the assembled bytes must be a RIFF/WAVE file;
- a command (``go``, ``decline``, ``stop``) is its ``content`` chunk, bare or wrapped in
  ``start``/``end``;
- anything else (not JSON, another role or type, a frame or message over the size limit)
  is a :class:`Problem`: one line for an error chunk, and the reader stays usable.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMMANDS",
    "MAX_FRAME_BYTES",
    "Action",
    "Begin",
    "Command",
    "Inbound",
    "Problem",
    "UserAudio",
    "UserText",
    "is_wav",
]

#: The largest frame (and the largest assembled message) a client may send.
MAX_FRAME_BYTES = 50_000_000
COMMANDS = ("go", "decline", "stop")


@dataclass(frozen=True, slots=True)
class Begin:
    """A user message or audio starts: a turn that is running stops first."""


@dataclass(frozen=True, slots=True)
class UserText:
    text: str


@dataclass(frozen=True, slots=True)
class UserAudio:
    wav: bytes


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # one of COMMANDS


@dataclass(frozen=True, slots=True)
class Problem:
    text: str  # one line for the client


Action = Begin | UserText | UserAudio | Command | Problem


def is_wav(data: bytes) -> bool:
    return len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WAVE"


def _size(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


class Inbound:
    """Assembles one connection's user messages, audio and commands from its frames."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kind: str | None = None  # "message" or "audio" while one is open
        self._text: list[str] = []
        self._audio = bytearray()
        self._size = 0

    def text(self, frame: str) -> list[Action]:
        if len(frame) > self.max_bytes:  # characters, a lower bound on bytes
            return [self._too_big(len(frame))]
        try:
            data = json.loads(frame)
        except json.JSONDecodeError as exc:
            return [Problem(f"the frame is not JSON ({exc.msg} at character {exc.pos})")]
        if not isinstance(data, dict):
            return [Problem("a frame must be a JSON object")]
        return self.chunk(data)

    def binary(self, frame: bytes) -> list[Action]:
        if len(frame) > self.max_bytes:
            return [self._too_big(len(frame))]
        if self._kind != "audio":
            return [Problem("a binary frame must be part of an audio message (after its start)")]
        return self._add_audio(frame)

    def chunk(self, data: dict[str, Any]) -> list[Action]:
        role, kind = data.get("role"), data.get("type")
        if "auth" in data and role is None:
            return [Problem("already authenticated")]
        if role != "user":
            return [Problem(f"unknown role {role!r}: a client sends role 'user'")]
        if kind == "command":
            return self._command(data)
        if kind not in ("message", "audio"):
            return [Problem(f"unknown type {kind!r}: expected message, audio or command")]
        if kind == "audio" and data.get("format", "wav") != "wav":
            self._reset()
            return [Problem(f"audio must be wav, not {data.get('format')!r}")]
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            return [Problem(f"the {kind}'s content must be a string")]
        actions: list[Action] = []
        if data.get("start"):
            self._reset()
            self._kind = kind
            actions.append(Begin())
        elif self._kind is not None and self._kind != kind:
            return [Problem(f"a {kind} chunk inside an unfinished {self._kind}")]
        whole = self._kind is None and not data.get("end")
        if whole:
            if content is None:
                return [Problem(f"a {kind} frame without start needs content")]
            self._kind = kind
            actions.append(Begin())
        if content:
            added = self._add_text(content) if kind == "message" else self._add_b64(content)
            actions.extend(added)
            if any(isinstance(a, Problem) for a in added):
                return actions
        if data.get("end") or whole:
            if self._kind is None:
                return [Problem(f"an end of a {kind} that never started")]
            actions.append(self._finish())
        return actions

    # -- assembling ---------------------------------------------------------------------------

    def _command(self, data: dict[str, Any]) -> list[Action]:
        content = data.get("content")
        if content is None and (data.get("start") or data.get("end")):
            return []  # the wrapper around a command's content chunk
        if content not in COMMANDS:
            return [Problem(f"unknown command {content!r}: expected go, decline or stop")]
        return [Command(str(content))]

    def _add_text(self, text: str) -> list[Action]:
        self._size += len(text.encode("utf-8"))
        if self._size > self.max_bytes:
            return [self._too_big(self._size)]
        self._text.append(text)
        return []

    def _add_b64(self, text: str) -> list[Action]:
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            self._reset()
            return [Problem("the audio content is not base64")]
        return self._add_audio(data)

    def _add_audio(self, data: bytes) -> list[Action]:
        self._size += len(data)
        if self._size > self.max_bytes:
            return [self._too_big(self._size)]
        self._audio += data
        return []

    def _finish(self) -> Action:
        kind, text, audio = self._kind, "".join(self._text), bytes(self._audio)
        self._reset()
        if kind == "message":
            return UserText(text)
        if not is_wav(audio):
            return Problem("the audio is not a wav file (RIFF/WAVE)")
        return UserAudio(audio)

    def _reset(self) -> None:
        self._kind = None
        self._text = []
        self._audio = bytearray()
        self._size = 0

    def _too_big(self, size: int) -> Problem:
        self._reset()  # part of what was being assembled is lost: drop all of it
        return Problem(
            f"too large: {_size(size)} (a frame or message may be at most {_size(self.max_bytes)})"
        )
