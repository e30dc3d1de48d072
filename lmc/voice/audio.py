"""WAV bytes in, what Whisper hears out: 16 kHz mono float32 samples in [-1, 1].

The LMC ``audio`` message carries WAV (format ``wav``) as base64. Anything that is not WAV
is refused here in one line, before any model is loaded. Integer PCM (the WAV that
recorders, browsers' encoders and espeak-ng write) is decoded with the standard library's
``wave`` and numpy; other WAV encodings (float, WAVE_FORMAT_EXTENSIBLE on Python < 3.12,
RF64) go through faster-whisper's own decoder (PyAV/FFmpeg).
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
import wave
from typing import TYPE_CHECKING, Any, Final

from lmc.errors import VoiceError
from lmc.messages import AudioChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Samples = npt.NDArray[np.float32]

__all__ = ["SAMPLE_RATE", "audio_message", "check_wav", "decode_wav", "resample", "wav_from_base64"]

#: What Whisper models are trained on.
SAMPLE_RATE: Final = 16_000

#: Leading bytes of the audio files people send instead of WAV, to name them in the error.
_OTHER_FORMATS: Final = (
    (b"OggS", "Ogg"),
    (b"\x1a\x45\xdf\xa3", "WebM/Matroska"),
    (b"ID3", "MP3"),
    (b"\xff\xfb", "MP3"),
    (b"\xff\xf3", "MP3"),
    (b"fLaC", "FLAC"),
    (b"FORM", "AIFF"),
    (b"#!AMR", "AMR"),
)


def audio_message(wav: bytes) -> AudioChunk:
    """The LMC audio message (``{"role": "user", "type": "audio", "format": "wav", ...}``)
    that carries the WAV file ``wav``, checked first: what ``Interpreter.chat`` hears."""
    check_wav(wav)
    content = base64.b64encode(wav).decode("ascii")
    return {"role": "user", "type": "audio", "format": "wav", "content": content}


def wav_from_base64(content: str) -> bytes:
    """The WAV bytes of an LMC audio message's base64 ``content`` (a data: URL prefix is ok)."""
    if content.startswith("data:") and "," in content:
        content = content.split(",", 1)[1]
    try:
        data = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise VoiceError(f"the audio content is not valid base64 ({exc})") from exc
    check_wav(data)
    return data


def check_wav(data: bytes) -> None:
    """Raise :class:`VoiceError` (one line) unless ``data`` starts like a WAV file."""
    if not data:
        raise VoiceError("the audio is empty (0 bytes)")
    if len(data) >= 12 and data[:4] in (b"RIFF", b"RF64") and data[8:12] == b"WAVE":
        return
    for magic, name in _OTHER_FORMATS:
        if data.startswith(magic):
            raise VoiceError(f"the audio is {name}, not WAV: lmc hears WAV audio (format 'wav')")
    if data[4:8] == b"ftyp":
        raise VoiceError("the audio is MP4/M4A, not WAV: lmc hears WAV audio (format 'wav')")
    raise VoiceError(
        f"the audio is not a WAV file (it starts with {data[:12]!r}, not RIFF....WAVE)"
    )


def decode_wav(data: bytes) -> Samples:
    """16 kHz mono float32 samples of the WAV file ``data``; VoiceError for bad or empty audio."""
    check_wav(data)
    if data.startswith(b"RF64"):  # 64-bit sizes: not for the standard library's wave
        return _decode_with_ffmpeg(data)
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            channels = reader.getnchannels()
            width = reader.getsampwidth()
            rate = reader.getframerate()
            raw = reader.readframes(reader.getnframes())
    except wave.Error as exc:
        if "unknown format" in str(exc):  # not integer PCM: let FFmpeg read it
            return _decode_with_ffmpeg(data)
        raise VoiceError(f"the WAV audio is malformed: {exc}") from exc
    except (RuntimeError, struct.error) as exc:  # wave's chunk reader on inconsistent sizes
        raise VoiceError("the WAV audio is malformed: its chunk sizes are inconsistent") from exc
    except EOFError as exc:
        raise VoiceError("the WAV audio is truncated: its header is incomplete") from exc
    if channels < 1 or rate < 1 or width not in (1, 2, 3, 4):
        raise VoiceError(
            f"the WAV audio has an unusable format ({channels} channels, {width * 8}-bit, "
            f"{rate} Hz)"
        )
    samples = _pcm_to_float(raw, width, channels)
    if samples.size == 0:
        raise VoiceError("the WAV audio holds no sound (0 samples)")
    return resample(samples, rate, SAMPLE_RATE)


def _pcm_to_float(raw: bytes, width: int, channels: int) -> Samples:
    """Interleaved little-endian PCM -> mono float32 (channels averaged)."""
    import numpy as np

    frame = width * channels
    raw = raw[: len(raw) - len(raw) % frame]  # a truncated last frame is dropped
    values: Any
    if width == 1:  # 8-bit WAV is unsigned
        values = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        values = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
    elif width == 3:
        triples = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        values = ints.astype(np.float32) / float(1 << 23)
    else:
        values = (np.frombuffer(raw, "<i4").astype(np.float64) / float(1 << 31)).astype(np.float32)
    mono: Samples = values.reshape(-1, channels).mean(axis=1, dtype=np.float32)
    return mono


def resample(samples: Samples, rate: int, target: int = SAMPLE_RATE) -> Samples:
    """Band-limited resampling (in the frequency domain): no aliasing from 44.1/48 kHz."""
    import numpy as np

    if rate == target or samples.size == 0:
        return samples.astype(np.float32, copy=False)
    count = max(1, round(samples.size * target / rate))
    spectrum = np.fft.rfft(samples.astype(np.float64))
    kept = spectrum[: count // 2 + 1]
    out = np.fft.irfft(kept, count) * (count / samples.size)
    result: Samples = out.astype(np.float32)
    return result


def _decode_with_ffmpeg(data: bytes) -> Samples:
    """WAV encodings ``wave`` does not read (float, extensible): faster-whisper's decoder."""
    from lmc.voice.extra import import_faster_whisper

    audio = import_faster_whisper().audio
    try:
        samples: Samples = audio.decode_audio(io.BytesIO(data), sampling_rate=SAMPLE_RATE)
    except Exception as exc:  # PyAV's errors (av.error.*) share no base class with ours
        raise VoiceError(f"the WAV audio cannot be decoded: {exc}") from exc
    if samples.size == 0:
        raise VoiceError("the WAV audio holds no sound (0 samples)")
    return samples
