"""Jupyter's wire protocol (messaging 5.3) over ZMTP (:mod:`lmc.computer.zmtp`), for lmc's
side of a local kernel.

What lmc asks of a kernel is small: ``kernel_info``, ``execute``, an ``input_reply`` and
control messages, and the replies and IOPub output back. Each message is the multipart
``[identities..., b"<IDS|MSG>", signature, header, parent_header, metadata, content,
buffers...]``, the signature an HMAC of the four JSON parts with the connection file's key
and scheme (``hmac-sha256``). A message whose signature is wrong is dropped, as
jupyter_client drops it. Message dicts have jupyter_client's keys (``header``,
``parent_header``, ``metadata``, ``content``, ``buffers``, ``msg_id``, ``msg_type``); the
header's ``date`` stays the kernel's ISO string.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from lmc.computer.zmtp import ZmtpSocket

__all__ = ["PROTOCOL_VERSION", "Channel", "Session", "WireClient"]

PROTOCOL_VERSION: Final = "5.3"
DELIMITER: Final = b"<IDS|MSG>"


def _json(value: Any) -> bytes:
    """As jupyter_client packs: UTF-8, a lone surrogate escaped back to its byte."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "surrogateescape")


def _unjson(part: bytes) -> Any:
    """As jupyter_client unpacks: a byte that is not UTF-8 (a kernel's lone surrogate) is
    U+FFFD, never a message lost."""
    return json.loads(part.decode("utf-8", "replace"))


class Session:
    """Signs and builds messages for one client session, and reads the kernel's."""

    def __init__(self, key: bytes, scheme: str) -> None:
        self.key = key
        digest = scheme.partition("-")[2] or "sha256"
        self._digest = getattr(hashlib, digest)
        self.session = os.urandom(16).hex()
        self.bsession = self.session.encode("ascii")
        self.username = os.environ.get("USER", "lmc")

    def sign(self, parts: list[bytes]) -> bytes:
        if not self.key:
            return b""
        mac = hmac.new(self.key, digestmod=self._digest)
        for part in parts:
            mac.update(part)
        return mac.hexdigest().encode("ascii")

    def msg(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any]:
        header = {
            "msg_id": os.urandom(16).hex(),
            "msg_type": msg_type,
            "username": self.username,
            "session": self.session,
            "date": datetime.now(UTC).isoformat(),
            "version": PROTOCOL_VERSION,
        }
        return {
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
            "buffers": [],
            "msg_id": header["msg_id"],
            "msg_type": msg_type,
        }

    def serialize(self, message: dict[str, Any]) -> list[bytes]:
        parts = [
            _json(message["header"]),
            _json(message["parent_header"]),
            _json(message["metadata"]),
            _json(message["content"]),
        ]
        return [DELIMITER, self.sign(parts), *parts]

    def deserialize(self, frames: list[bytes]) -> dict[str, Any] | None:
        """The message in ``frames``, or None for one that is malformed or wrongly signed."""
        try:
            start = frames.index(DELIMITER) + 1
        except ValueError:
            return None
        if len(frames) < start + 5:
            return None
        signature, parts = frames[start], frames[start + 1 : start + 5]
        if self.key and not hmac.compare_digest(signature, self.sign(parts)):
            return None
        try:
            header, parent, metadata, content = (_unjson(part) for part in parts)
        except ValueError:
            return None
        if not isinstance(header, dict) or not isinstance(parent, dict):
            return None
        return {
            "header": header,
            "parent_header": parent,
            "metadata": metadata,
            "content": content,
            "buffers": frames[start + 5 :],
            "msg_id": header.get("msg_id"),
            "msg_type": header.get("msg_type"),
        }


class Channel:
    """One socket of the kernel's: ``send`` a message, ``get_msg`` one waiting (or None)."""

    def __init__(self, socket: ZmtpSocket, session: Session) -> None:
        self.socket = socket
        self.session = session

    def send(self, message: dict[str, Any]) -> None:
        self.socket.send_multipart(self.session.serialize(message))

    def get_msg(self) -> dict[str, Any] | None:
        while True:
            frames = self.socket.recv()
            if frames is None:
                return None
            message = self.session.deserialize(frames)
            if message is not None:
                return message

    def close(self) -> None:
        self.socket.close()


class WireClient:
    """The sockets of the kernel a connection file describes (they connect as they can:
    see :meth:`ZmtpSocket.try_connect`)."""

    def __init__(self, connection_file: Path) -> None:
        info = json.loads(Path(connection_file).read_text(encoding="utf-8"))
        key = str(info.get("key") or "").encode("utf-8")
        self.session = Session(key, str(info.get("signature_scheme") or "hmac-sha256"))
        transport, ip = info.get("transport", "tcp"), info.get("ip", "127.0.0.1")

        def url(name: str) -> str:
            port = info[f"{name}_port"]
            return f"tcp://{ip}:{port}" if transport == "tcp" else f"ipc://{ip}-{port}"

        def connect(kind: str, name: str) -> Channel:
            # stdin must share the shell's identity (input_request); a SUB takes everything
            socket = ZmtpSocket(kind, url(name), identity=self.session.bsession)
            socket.try_connect()
            return Channel(socket, self.session)

        self.shell_channel = connect("DEALER", "shell")
        self.iopub_channel = connect("SUB", "iopub")
        self.stdin_channel = connect("DEALER", "stdin")
        self.control_channel = connect("DEALER", "control")

    def _send(self, channel: Channel, msg_type: str, content: dict[str, Any]) -> str:
        message = self.session.msg(msg_type, content)
        channel.send(message)
        return str(message["msg_id"])

    def kernel_info(self) -> str:
        return self._send(self.shell_channel, "kernel_info_request", {})

    def execute(
        self,
        code: str,
        *,
        silent: bool = False,
        store_history: bool = True,
        allow_stdin: bool = False,
        stop_on_error: bool = True,
    ) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": {},
            "allow_stdin": allow_stdin,
            "stop_on_error": stop_on_error,
        }
        return self._send(self.shell_channel, "execute_request", content)

    def input(self, value: str) -> None:
        self._send(self.stdin_channel, "input_reply", {"value": value})

    def stop_channels(self) -> None:
        for channel in (
            self.shell_channel,
            self.iopub_channel,
            self.stdin_channel,
            self.control_channel,
        ):
            channel.close()
