"""Inline images in terminals that speak an image protocol (kitty, iTerm2), by environment.

Inside tmux or screen the escape sequences do not reach the outer terminal, so lmc falls back
to showing the saved file's path and size there.
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Mapping
from typing import Literal

__all__ = ["Protocol", "describe_image", "detect_protocol", "image_size", "inline_sequence"]

Protocol = Literal["kitty", "iterm2"]

_KITTY_CHUNK = 4096


def detect_protocol(env: Mapping[str, str] | None = None) -> Protocol | None:
    """Which inline image protocol this terminal supports, if any."""
    env = os.environ if env is None else env
    if env.get("TMUX") or env.get("TERM", "").startswith("screen"):
        return None
    term = env.get("TERM", "")
    program = env.get("TERM_PROGRAM", "")
    if "kitty" in term or env.get("KITTY_WINDOW_ID") or program == "ghostty":
        return "kitty"
    if program in ("iTerm.app", "WezTerm") or env.get("LC_TERMINAL") == "iTerm2":
        return "iterm2"
    return None


def inline_sequence(data: bytes, protocol: Protocol) -> str:
    """The escape sequence that draws the PNG/JPEG ``data`` at the cursor."""
    payload = base64.standard_b64encode(data).decode("ascii")
    if protocol == "iterm2":
        return f"\x1b]1337;File=inline=1;size={len(data)};preserveAspectRatio=1:{payload}\x07\n"
    parts = [payload[i : i + _KITTY_CHUNK] for i in range(0, len(payload), _KITTY_CHUNK)] or [""]
    out = []
    for index, part in enumerate(parts):
        more = 1 if index < len(parts) - 1 else 0
        control = f"f=100,a=T,m={more}" if index == 0 else f"m={more}"
        out.append(f"\x1b_G{control};{part}\x1b\\")
    return "".join(out) + "\n"


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG or JPEG, read from its header; None when unknown."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        index = 2
        while index + 9 < len(data):
            if data[index] != 0xFF:
                return None
            marker = data[index + 1]
            length = int.from_bytes(data[index + 2 : index + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return int(width), int(height)
            index += 2 + length
    return None


def describe_image(data: bytes) -> str:
    """A short readable description for terminals without an image protocol."""
    size = image_size(data)
    dims = f"{size[0]}×{size[1]} " if size else ""
    return f"{dims}image, {len(data) / 1024:.1f} KiB"
