"""faster-whisper models, loaded once per process and shared by every thread.

Loading a model takes seconds and its memory is worth sharing, so each model directory is
loaded once, under a lock, and kept for the life of the process. A loaded ``WhisperModel``
may transcribe from several threads at once (CTranslate2 queues the calls), which is what a
server with several clients does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmc.errors import SpeechModelNotFoundError, VoiceError
from lmc.voice.extra import import_faster_whisper

if TYPE_CHECKING:
    from lmc.voice.audio import Samples

__all__ = ["import_faster_whisper", "load_whisper", "transcribe_samples"]

_lock = threading.Lock()
_models: dict[Path, Any] = {}


def load_whisper(model_dir: Path) -> Any:
    """The process's ``WhisperModel`` for ``model_dir``, loaded on first use."""
    key = model_dir.resolve()
    with _lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = _load(key)
        return model


def _load(model_dir: Path) -> Any:
    from lmc.voice.resolve import NO_STT_MODEL_HINT

    faster_whisper = import_faster_whisper()
    try:
        # "auto": CUDA when CTranslate2 sees a GPU, and the fastest type the device supports
        # (int8 on CPU: the float16 weights of the published models are slow there).
        return faster_whisper.WhisperModel(str(model_dir), device="auto", compute_type="auto")
    except (RuntimeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpeechModelNotFoundError(
            f"cannot load the speech model in {model_dir}: {first}", hint=NO_STT_MODEL_HINT
        ) from exc


def transcribe_samples(model: Any, samples: Samples, cancel: threading.Event | None = None) -> str:
    """The text spoken in ``samples`` (16 kHz mono); "" when nothing was said (or cancelled).

    Silero VAD (bundled with faster-whisper) drops the silences first, so silence gives no
    text instead of the phrases Whisper invents for it.
    """
    try:
        segments, _info = model.transcribe(samples, beam_size=5, vad_filter=True)
        return _join(segments, cancel)
    except (RuntimeError, ValueError, OSError) as exc:
        raise VoiceError(f"transcribing the audio failed: {exc}") from exc


def _join(segments: Iterable[Any], cancel: threading.Event | None) -> str:
    """Segments are decoded lazily, one 30-second window at a time: stop between them."""
    parts: list[str] = []
    for segment in segments:
        if cancel is not None and cancel.is_set():
            return ""
        parts.append(str(segment.text).strip())
    return " ".join(part for part in parts if part)
