"""The seed's streaming response (shared/seeds/003), as the chunks a renderer is fed."""

from __future__ import annotations

import re

from lmc.messages import Chunk

WORDS = [
    "The", " result", " of", " the", " division", " ", "34", "/", "24",
    " is", " approximately", " ", "1", ".", "42", ".",
]  # fmt: skip


def _answer(text: str) -> Chunk:
    return {"role": "assistant", "type": "message", "content": text}


SEED: list[Chunk] = [
    {"role": "assistant", "type": "code", "format": "python", "start": True},
    {"role": "assistant", "type": "code", "format": "python", "content": "34"},
    {"role": "assistant", "type": "code", "format": "python", "content": " /"},
    {"role": "assistant", "type": "code", "format": "python", "content": " "},
    {"role": "assistant", "type": "code", "format": "python", "content": "24"},
    {"role": "assistant", "type": "code", "format": "python", "end": True},
    {
        "role": "computer",
        "type": "confirmation",
        "format": "execution",
        "content": {"type": "code", "format": "python", "content": "34 / 24"},
    },
    {"role": "computer", "type": "console", "start": True},
    {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
    {"role": "computer", "type": "console", "format": "output", "content": "1.4166666666666667\n"},
    {"role": "computer", "type": "console", "format": "active_line", "content": None},
    {"role": "computer", "type": "console", "end": True},
    {"role": "assistant", "type": "message", "start": True},
    *(_answer(word) for word in WORDS),
    {"role": "assistant", "type": "message", "end": True},
]

FINAL = "The result of the division 34/24 is approximately 1.42."

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b_G[^\x1b]*\x1b\\")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)
