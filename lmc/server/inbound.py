"""What a client's frames mean: Open Interpreter's server protocol as a sans-IO reader.

Frames in (:meth:`Inbound.text`, :meth:`Inbound.binary`), actions out. Nothing here touches
a socket, so every rule of the protocol is tested on its own:

- a user message is ``start``, content chunks, ``end`` (``type`` ``message``); one frame with
  ``content`` and neither ``start`` nor ``end`` is a whole message;
- Open Interpreter's documented multi-part form also works: ``{"role": "user", "start":
  true}``, typed parts, ``{"role": "user", "end": true}``
  (https://docs.openinterpreter.com/server/usage; its own test,
  ``tests/test_interpreter.py`` in OpenInterpreter/open-interpreter, sends exactly that);
  the text parts make the message, other parts (images, files) are reported and left out;
- audio is the same with ``type`` ``audio`` and ``format`` ``wav`` or ``bytes.wav``; its
  content is binary frames or base64 ``content`` strings. A RIFF/WAVE file is taken as it
  is; with ``bytes.wav``, bytes without a RIFF header are raw 16-bit mono PCM at 16 kHz, as
  the 01's client streams them (``software/source/clients/base_device.py`` in
  OpenInterpreter/01: ``format: "bytes.wav"``, ``paInt16``, one channel, 16000 Hz);
- a command (``go``, ``decline``, ``stop``) is its ``content`` chunk, bare or wrapped in
  ``start``/``end``;
- anything else (not JSON, nested too deeply, a number too long, a lone surrogate, another
  role or type, a frame or message over the size limit) is a :class:`Problem`: one line for
  an error chunk, and the reader stays usable. No frame makes the reader raise.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
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
    "parse_frame",
    "pcm_to_wav",
]

#: The largest frame (and the largest assembled message) a client may send.
MAX_FRAME_BYTES = 50_000_000
COMMANDS = ("go", "decline", "stop")
AUDIO_FORMATS = ("wav", "bytes.wav")
#: Raw PCM from Open Interpreter's 01 client: 16-bit, mono, 16 kHz.
RAW_PCM_RATE = 16_000
#: Longer integers are refused before Python parses them (its own limit is 4,300 digits).
_MAX_INT_DIGITS = 100


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


def pcm_to_wav(pcm: bytes, rate: int = RAW_PCM_RATE) -> bytes:
    """16-bit mono little-endian PCM wrapped in a WAV header."""
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm


def _size(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


def _shown(value: object) -> str:
    """A value for an error line: its repr (ASCII-safe for surrogates), clipped."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError("too many digits")
    return int(digits)


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_frame(frame: str) -> dict[str, Any] | Problem:
    """A text frame as a JSON object, or the one-line reason it is not one."""
    try:
        data = json.loads(frame, parse_int=_int)
    except RecursionError:
        return Problem("the frame is nested too deeply")
    except json.JSONDecodeError as exc:
        return Problem(f"the frame is not JSON ({exc.msg} at character {exc.pos})")
    except ValueError:
        return Problem(f"a number in the frame has more than {_MAX_INT_DIGITS} digits")
    if not isinstance(data, dict):
        return Problem("a frame must be a JSON object")
    return data


class Inbound:
    """Assembles one connection's user messages, audio and commands from its frames."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kind: str | None = None  # "message" or "audio" while one is open
        self._group = False  # inside a typeless {"role": "user", "start": true}
        self._format = "wav"
        self._text: list[str] = []
        self._audio = bytearray()
        self._size = 0

    def text(self, frame: str) -> list[Action]:
        if len(frame) > self.max_bytes:  # characters, a lower bound on bytes
            return [self._too_big(len(frame))]
        data = parse_frame(frame)
        if isinstance(data, Problem):
            return [data]
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
            return [Problem(f"unknown role {_shown(role)}: a client sends role 'user'")]
        if kind is None and "content" not in data:
            return self._group_flag(data)
        if kind == "command":
            return self._command(data)
        if kind not in ("message", "audio"):
            return self._other_part(kind)
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            return [Problem(f"the {kind}'s content must be a string")]
        if content is not None and not _unicode(content):
            self._reset()
            return [Problem(f"the {kind}'s content is not valid Unicode (a lone surrogate)")]
        if self._group and kind == "message" and not data.get("start"):
            return self._add_text(content) if content else []  # a part (its end: nothing)
        if kind == "audio" and data.get("format", "wav") not in AUDIO_FORMATS:
            self._reset()
            return [Problem(f"audio must be wav or bytes.wav, not {_shown(data.get('format'))}")]
        return self._part(data, kind, content)

    # -- the pieces of a message --------------------------------------------------------------

    def _part(self, data: dict[str, Any], kind: str, content: str | None) -> list[Action]:
        actions: list[Action] = []
        if data.get("start"):
            if self._kind is not None or self._text:
                actions.append(Problem("a new message began: the unfinished one was dropped"))
            self._reset()
            self._kind = kind
            self._format = str(data.get("format", "wav"))
            actions.append(Begin())
        elif self._kind is not None and self._kind != kind:
            return [Problem(f"a {kind} chunk inside an unfinished {self._kind}")]
        whole = self._kind is None and not data.get("end")
        if whole:
            if content is None:
                return [Problem(f"a {kind} frame without start needs content")]
            self._kind = kind
            self._format = str(data.get("format", "wav"))
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

    def _group_flag(self, data: dict[str, Any]) -> list[Action]:
        """``{"role": "user", "start": true}`` or ``... "end": true}`` around typed parts."""
        if data.get("start"):
            self._reset()
            self._group = True
            return []
        if data.get("end"):
            if not self._group:
                return [Problem("an end of a message that never started")]
            text = "".join(self._text)
            self._reset()
            if not text.strip():
                return []  # a group of commands (or only parts lmc leaves out)
            return [Begin(), UserText(text)]
        return [Problem("a user frame needs a type (message, audio or command), start or end")]

    def _other_part(self, kind: object) -> list[Action]:
        if self._group and kind in ("image", "file", "code"):
            return [Problem(f"lmc takes text and audio from clients: the {kind} was left out")]
        return [Problem(f"unknown type {_shown(kind)}: expected message, audio or command")]

    def _command(self, data: dict[str, Any]) -> list[Action]:
        content = data.get("content")
        if content is None and (data.get("start") or data.get("end")):
            return []  # the wrapper around a command's content chunk
        if not isinstance(content, str) or content not in COMMANDS:
            return [Problem(f"unknown command {_shown(content)}: expected go, decline or stop")]
        return [Command(content)]

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
        kind, text, audio, fmt = self._kind, "".join(self._text), bytes(self._audio), self._format
        self._reset()
        if kind == "message":
            return UserText(text)
        if is_wav(audio):
            return UserAudio(audio)
        if fmt == "bytes.wav" and audio and len(audio) % 2 == 0:
            return UserAudio(pcm_to_wav(audio))
        return Problem("the audio is not a wav file (RIFF/WAVE)")

    def _reset(self) -> None:
        self._kind = None
        self._group = False
        self._format = "wav"
        self._text = []
        self._audio = bytearray()
        self._size = 0

    def _too_big(self, size: int) -> Problem:
        self._reset()  # part of what was being assembled is lost: drop all of it
        return Problem(
            f"too large: {_size(size)} (a frame or message may be at most {_size(self.max_bytes)})"
        )
