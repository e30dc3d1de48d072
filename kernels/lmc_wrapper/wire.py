"""The Jupyter wire protocol (messaging spec 5.3, "The Wire Protocol"): sign, pack, unpack.

A message on a ROUTER/DEALER/PUB socket is ``[ident..., b"<IDS|MSG>", signature, header,
parent_header, metadata, content, buffers...]``; the signature is the HMAC (the connection
file's ``signature_scheme``, keyed by its ``key``) of the four JSON frames, hex digits, empty
when the key is empty. jupyter_client's ``Session`` does the same, but importing it pulls in
traitlets, tornado, dateutil and ``zmq.asyncio`` (about 70 ms, 90 with the package's client
parts), most of a lean kernel's start; tests check this codec against ``Session`` both ways.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["DELIMITER", "PROTOCOL_VERSION", "Message", "WireError", "WireSession"]

DELIMITER = b"<IDS|MSG>"
PROTOCOL_VERSION = "5.3"
#: Signatures remembered to refuse a replayed message (jupyter_client keeps as many).
DIGEST_HISTORY = 1 << 16


class WireError(Exception):
    """A message that cannot be read: no delimiter, a bad signature, a replay, bad JSON."""


@dataclass
class Message:
    """One received message: who sent it (ROUTER identities) and its four parts."""

    idents: list[bytes]
    header: dict[str, Any]
    parent_header: dict[str, Any]
    metadata: dict[str, Any]
    content: dict[str, Any]
    buffers: list[bytes] = field(default_factory=list)

    @property
    def msg_type(self) -> str:
        return str(self.header.get("msg_type", ""))


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogateescape")


def _loads(frame: bytes) -> dict[str, Any]:
    value = json.loads(frame.decode("utf-8", "surrogateescape"))
    if not isinstance(value, dict):
        raise WireError("a message part is not a JSON object")
    return value


class WireSession:
    """One kernel's side of the protocol: its session id and key (any thread may use it)."""

    def __init__(self, key: bytes, signature_scheme: str = "hmac-sha256") -> None:
        scheme, _, digest = signature_scheme.partition("-")
        if scheme != "hmac" or digest not in hashlib.algorithms_available:
            raise WireError(f"unsupported signature scheme {signature_scheme!r}")
        self._key = key
        self._digest = digest
        self.session_id = os.urandom(16).hex()
        self.username = os.environ.get("USER", "username")
        self._seen: set[bytes] = set()
        self._seen_order: deque[bytes] = deque()
        self._seen_lock = threading.Lock()  # the shell and the control thread both unpack

    def sign(self, parts: list[bytes]) -> bytes:
        if not self._key:
            return b""
        mac = hmac.new(self._key, digestmod=self._digest)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode("ascii")

    def header(self, msg_type: str) -> dict[str, Any]:
        return {
            "msg_id": os.urandom(16).hex(),
            "session": self.session_id,
            "username": self.username,
            "date": datetime.now(UTC).isoformat(),
            "msg_type": msg_type,
            "version": PROTOCOL_VERSION,
        }

    def pack(
        self,
        msg_type: str,
        content: dict[str, Any],
        parent_header: dict[str, Any] | None = None,
        *,
        idents: list[bytes] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[bytes]:
        """The frames of a new message in reply to (or caused by) ``parent_header``."""
        parts = [
            _dumps(self.header(msg_type)),
            _dumps(parent_header or {}),
            _dumps(metadata or {}),
            _dumps(content),
        ]
        return [*(idents or []), DELIMITER, self.sign(parts), *parts]

    def unpack(self, frames: list[bytes]) -> Message:
        """Read a received message, checking its signature; raises :class:`WireError`."""
        try:
            at = frames.index(DELIMITER)
        except ValueError:
            raise WireError("no <IDS|MSG> delimiter") from None
        signature, *parts = frames[at + 1 :]
        if len(parts) < 4:
            raise WireError(f"{len(parts)} message parts, 4 expected")
        if self._key:
            if not hmac.compare_digest(signature, self.sign(parts[:4])):
                raise WireError("invalid signature")
            self._remember(signature)
        try:
            header, parent, metadata, content = (_loads(part) for part in parts[:4])
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise WireError(f"a message part is not JSON: {exc}") from None
        return Message(frames[:at], header, parent, metadata, content, list(parts[4:]))

    def _remember(self, signature: bytes) -> None:
        with self._seen_lock:
            if signature in self._seen:
                raise WireError("a replayed message (its signature was seen before)")
            self._seen.add(signature)
            self._seen_order.append(signature)
            if len(self._seen_order) > DIGEST_HISTORY:
                self._seen.discard(self._seen_order.popleft())
