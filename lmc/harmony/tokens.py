"""Harmony's special tokens, as the literal markers lmc passes between layers.

Backends emit special tokens as these exact strings (with ``Piece.special`` set), never as
text, and the renderer writes them; ids are those of the o200k_harmony vocabulary.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CALL",
    "CHANNEL",
    "CONSTRAIN",
    "END",
    "ENDOFTEXT",
    "MESSAGE",
    "RETURN",
    "SPECIAL_TOKENS",
    "SPECIAL_TOKEN_IDS",
    "START",
    "STARTOFTEXT",
    "STOP_TOKENS",
]

START: Final = "<|start|>"
END: Final = "<|end|>"
MESSAGE: Final = "<|message|>"
CHANNEL: Final = "<|channel|>"
CONSTRAIN: Final = "<|constrain|>"
RETURN: Final = "<|return|>"
CALL: Final = "<|call|>"
STARTOFTEXT: Final = "<|startoftext|>"
ENDOFTEXT: Final = "<|endoftext|>"

#: Marker -> id in the o200k_harmony vocabulary.
SPECIAL_TOKEN_IDS: Final = {
    STARTOFTEXT: 199998,
    ENDOFTEXT: 199999,
    RETURN: 200002,
    CONSTRAIN: 200003,
    CHANNEL: 200005,
    START: 200006,
    END: 200007,
    MESSAGE: 200008,
    CALL: 200012,
}

SPECIAL_TOKENS: Final = frozenset(SPECIAL_TOKEN_IDS)

#: Sampling stops on these, never on ``<|end|>``.
STOP_TOKENS: Final = frozenset({RETURN, CALL})
