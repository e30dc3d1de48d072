"""WAV bytes to text: the one call lmc's consumers make (the Interpreter, ``lmc run``)."""

from __future__ import annotations

import threading
from pathlib import Path

from lmc.errors import VoiceError
from lmc.voice.audio import SAMPLE_RATE, decode_wav
from lmc.voice.resolve import resolve_stt_model
from lmc.voice.whisper import load_whisper, transcribe_samples

__all__ = ["load_speech_model", "transcribe_wav"]


def load_speech_model(model: str | None = None) -> Path:
    """Resolve (download if needed) and load the speech model now, e.g. when a server starts,
    so that the first audio message does not wait for it; returns the model's directory."""
    path = resolve_stt_model(model)
    load_whisper(path)
    return path


def transcribe_wav(
    data: bytes, model: str | None = None, *, cancel: threading.Event | None = None
) -> str:
    """What is said in the WAV file ``data``, with the faster-whisper ``model`` (a
    ``--stt-model`` value; None: the default). VoiceError for bad audio or when nothing
    was said; "" only when ``cancel`` was set meanwhile."""
    samples = decode_wav(data)  # bad audio fails before the model is fetched or loaded
    whisper = load_whisper(resolve_stt_model(model))
    text = transcribe_samples(whisper, samples, cancel)
    if not text and not (cancel is not None and cancel.is_set()):
        seconds = samples.size / SAMPLE_RATE
        raise VoiceError(f"no speech was heard in the audio ({seconds:.1f} s)")
    return text
