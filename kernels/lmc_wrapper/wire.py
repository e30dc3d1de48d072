"""The Jupyter wire protocol (messaging spec 5.3, "The Wire Protocol"): sign, pack, unpack.

A message on a ROUTER/DEALER/PUB socket is ``[ident..., b"<IDS|MSG>", signature, header,
parent_header, metadata, content, buffers...]``; the signature is the HMAC (the connection
file's ``signature_scheme``, keyed by its ``key``) of the four JSON frames, hex digits, empty
when the key is empty. jupyter_client's ``Session`` does the same, but importing it pulls in
traitlets, tornado, dateutil and ``zmq.asyncio`` (about 70 ms, 90 with the package's client
parts), most of a lean kernel's start; tests check this codec against ``Session`` both ways.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable

TYPE_CHECKING = False  # typing is ~5 ms of a kernel's start; annotations need it only
if TYPE_CHECKING:
    from typing import Any, NamedTuple

__all__ = ["DELIMITER", "PROTOCOL_VERSION", "Message", "WireError", "WireSession"]

DELIMITER = b"<IDS|MSG>"
PROTOCOL_VERSION = "5.3"
#: Signatures remembered to refuse a replayed message (jupyter_client keeps as many).
DIGEST_HISTORY = 1 << 16


class WireError(Exception):
    """A message that cannot be read: no delimiter, a bad signature, a replay, bad JSON."""


if TYPE_CHECKING:

    class Message(NamedTuple):
        """One received message: who sent it (ROUTER identities) and its four parts."""

        idents: list[bytes]
        header: dict[str, Any]
        parent_header: dict[str, Any]
        metadata: dict[str, Any]
        content: dict[str, Any]
        buffers: list[bytes]

        @property
        def msg_type(self) -> str:
            return str(self.header.get("msg_type", ""))

else:

    class Message(
        collections.namedtuple("Message", "idents header parent_header metadata content buffers")
    ):
        __slots__ = ()

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


def _hash(digest: str) -> Callable[..., Any] | None:
    """The constructor of ``digest`` (None if unknown). SHA-256, the scheme every connection
    file names, comes from the interpreter's own module: ``hashlib`` and ``hmac`` load
    OpenSSL's libcrypto (~0.4 MB of private memory and a few milliseconds per kernel)."""
    if digest == "sha256":
        for module in ("_sha2", "_sha256"):  # Python 3.12+, then 3.11
            with contextlib.suppress(ImportError, AttributeError):
                return importlib.import_module(module).sha256  # type: ignore[no-any-return]
    import hashlib

    return getattr(hashlib, digest, None) if digest in hashlib.algorithms_available else None


try:  # constant-time comparison: what hmac.compare_digest is without OpenSSL
    from _operator import _compare_digest as _compare
except ImportError:  # pragma: no cover - another interpreter
    from hmac import compare_digest as _compare  # type: ignore[no-redef]


class _Hmac:
    """HMAC (RFC 2104) over a hash constructor, its padded keys hashed once."""

    def __init__(self, key: bytes, new: Callable[..., Any]) -> None:
        block = int(new().block_size)
        if len(key) > block:
            key = new(key).digest()
        key = key.ljust(block, b"\0")
        self._inner = new(bytes(b ^ 0x36 for b in key))
        self._outer = new(bytes(b ^ 0x5C for b in key))

    def hexdigest(self, parts: list[bytes]) -> str:
        inner = self._inner.copy()
        for part in parts:
            inner.update(part)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return str(outer.hexdigest())


def _now() -> str:
    """The current UTC time as ``datetime.now(UTC).isoformat()`` writes it, without datetime."""
    now = time.time()
    seconds = int(now)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{int((now - seconds) * 1e6):06d}+00:00"


class WireSession:
    """One kernel's side of the protocol: its session id and key (any thread may use it)."""

    def __init__(self, key: bytes, signature_scheme: str = "hmac-sha256") -> None:
        scheme, _, digest = signature_scheme.partition("-")
        new = _hash(digest) if scheme == "hmac" else None
        if new is None:
            raise WireError(f"unsupported signature scheme {signature_scheme!r}")
        self._key = key
        self._mac = _Hmac(key, new)
        self.session_id = os.urandom(16).hex()
        self.username = os.environ.get("USER", "username")
        self._seen: set[bytes] = set()
        self._seen_order: deque[bytes] = deque()
        self._seen_lock = threading.Lock()  # the shell and the control thread both unpack

    def sign(self, parts: list[bytes]) -> bytes:
        if not self._key:
            return b""
        return self._mac.hexdigest(parts).encode("ascii")

    def header(self, msg_type: str) -> dict[str, Any]:
        return {
            "msg_id": os.urandom(16).hex(),
            "session": self.session_id,
            "username": self.username,
            "date": _now(),
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
            if not _compare(signature, self.sign(parts[:4])):
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
