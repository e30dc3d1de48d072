"""The voice extra's one import (faster-whisper), with the hint to install it when missing.

Its own module so that decoding (:mod:`lmc.voice.audio`) and the model
(:mod:`lmc.voice.whisper`) both use it without importing each other.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from lmc.errors import VoiceError
from lmc.extras import install_hint

__all__ = ["import_faster_whisper"]


def import_faster_whisper() -> ModuleType:
    """The faster_whisper module, or a clear error saying how to install it."""
    try:
        faster_whisper = importlib.import_module("faster_whisper")
    except ImportError as exc:
        raise VoiceError(
            f"speech input needs faster-whisper, which cannot be imported ({exc})",
            hint=f"install the voice extra: {install_hint('voice')}",
        ) from exc
    return faster_whisper
