"""WAV checking and decoding: every PCM width, channel count and rate to 16 kHz mono."""

from __future__ import annotations

import base64
import io
import struct
import wave

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmc.errors import VoiceError
from lmc.messages import text_of, validate_message
from lmc.voice.audio import (
    SAMPLE_RATE,
    audio_message,
    check_wav,
    decode_wav,
    resample,
    wav_from_base64,
)


def pcm_wav(samples: np.ndarray, rate: int, width: int = 2, channels: int = 1) -> bytes:
    """A WAV file of float samples in [-1, 1] (shape (n,) or (n, channels)) as integer PCM."""
    frames = samples.reshape(len(samples), channels)
    if width == 1:
        raw = (np.clip(frames, -1, 1) * 127 + 128).astype(np.uint8).tobytes()
    elif width == 2:
        raw = (np.clip(frames, -1, 1) * 32767).astype("<i2").tobytes()
    elif width == 3:
        ints = (np.clip(frames, -1, 1) * (2**23 - 1)).astype("<i4").reshape(-1)
        raw = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
    else:
        raw = (np.clip(frames, -1, 1) * (2**31 - 1)).astype("<i4").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(raw)
    return out.getvalue()


def float_wav(samples: np.ndarray, rate: int) -> bytes:
    """A WAV file in IEEE float (format 3), which the standard library's wave cannot read."""
    data = samples.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def tone(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def peak_frequency(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_every_pcm_width_decodes_to_the_same_tone(width: int) -> None:
    samples = decode_wav(pcm_wav(tone(440, SAMPLE_RATE), SAMPLE_RATE, width=width))
    assert samples.dtype == np.float32
    assert samples.shape == (SAMPLE_RATE,)
    assert np.allclose(samples, tone(440, SAMPLE_RATE), atol=1.5 / 127)


def test_stereo_is_averaged_to_mono() -> None:
    left, right = tone(440, SAMPLE_RATE), tone(440, SAMPLE_RATE, amplitude=0.1)
    samples = decode_wav(pcm_wav(np.stack([left, right], axis=1), SAMPLE_RATE, channels=2))
    assert np.allclose(samples, (left + right) / 2, atol=2 / 32767)


@pytest.mark.parametrize("rate", [8_000, 22_050, 44_100, 48_000])
def test_rates_are_resampled_to_16_khz_keeping_the_pitch(rate: int) -> None:
    samples = decode_wav(pcm_wav(tone(440, rate, seconds=2.0), rate))
    assert samples.shape == (2 * SAMPLE_RATE,)
    assert abs(peak_frequency(samples, SAMPLE_RATE) - 440) < 1.0
    assert 0.45 < float(np.max(np.abs(samples[1000:-1000]))) < 0.55  # loudness kept


def test_resampling_does_not_fold_high_frequencies_back() -> None:
    """A 12 kHz tone at 48 kHz is above what 16 kHz can hold: it must vanish, not alias to
    4 kHz as naive decimation would make it."""
    high = tone(12_000, 48_000)
    down = resample(high, 48_000)
    assert float(np.sqrt(np.mean(down**2))) < 0.01
    naive = high[::3]
    assert float(np.sqrt(np.mean(naive**2))) > 0.3  # the test tone is really there


def test_float_wav_goes_through_ffmpeg() -> None:
    samples = decode_wav(float_wav(tone(440, 22_050), 22_050))
    assert abs(len(samples) - SAMPLE_RATE) <= 64
    assert abs(peak_frequency(samples, SAMPLE_RATE) - 440) < 2.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the audio is empty"),
        (b"OggS\x00\x02" + b"\x00" * 40, "the audio is Ogg, not WAV"),
        (b"\x1a\x45\xdf\xa3" + b"\x00" * 40, "the audio is WebM/Matroska, not WAV"),
        (b"ID3\x04" + b"\x00" * 40, "the audio is MP3, not WAV"),
        (b"\x00\x00\x00\x20ftypM4A " + b"\x00" * 40, "the audio is MP4/M4A, not WAV"),
        (b"hello, I am text and not sound", "the audio is not a WAV file"),
    ],
)
def test_anything_but_wav_is_one_clear_line(data: bytes, message: str) -> None:
    with pytest.raises(VoiceError, match=message) as info:
        check_wav(data)
    assert "\n" not in str(info.value)
    with pytest.raises(VoiceError, match=message):
        decode_wav(data)


def test_a_wav_without_samples_is_refused() -> None:
    with pytest.raises(VoiceError, match="holds no sound"):
        decode_wav(pcm_wav(np.zeros(0, np.float32), SAMPLE_RATE))


def test_a_truncated_wav_is_refused_or_read_as_far_as_it_goes() -> None:
    whole = pcm_wav(tone(440, SAMPLE_RATE), SAMPLE_RATE)
    with pytest.raises(VoiceError, match="the WAV audio is truncated: its header is incomplete"):
        decode_wav(whole[:30])
    with pytest.raises(VoiceError, match="the WAV audio is malformed: fmt chunk and/or data chunk"):
        decode_wav(whole[:40])
    half = decode_wav(whole[: len(whole) // 2 + 1])  # an odd byte: half a sample dropped
    assert 0 < len(half) < SAMPLE_RATE


def test_audio_message_is_the_lmc_audio_message_chat_takes() -> None:
    wav = pcm_wav(tone(440, SAMPLE_RATE), SAMPLE_RATE)
    message = audio_message(wav)
    assert validate_message(message) == message
    assert {k: v for k, v in message.items() if k != "content"} == {
        "role": "user",
        "type": "audio",
        "format": "wav",
    }
    assert wav_from_base64(text_of(message)) == wav
    with pytest.raises(VoiceError, match="the audio is Ogg, not WAV"):
        audio_message(b"OggS" + bytes(40))


def test_base64_content_and_data_urls() -> None:
    wav = pcm_wav(tone(440, SAMPLE_RATE), SAMPLE_RATE)
    encoded = base64.b64encode(wav).decode()
    assert wav_from_base64(encoded) == wav
    assert wav_from_base64("data:audio/wav;base64," + encoded) == wav
    with pytest.raises(VoiceError, match="not valid base64"):
        wav_from_base64("this is not base64!")
    with pytest.raises(VoiceError, match="not a WAV file"):
        wav_from_base64(base64.b64encode(b"plain text, not sound").decode())


def test_a_streamed_wav_with_unknown_length_decodes_to_its_end() -> None:
    """``espeak-ng --stdout`` and recorders writing to a pipe put a huge placeholder in the
    RIFF and data sizes; the samples end where the bytes do."""
    wav = bytearray(pcm_wav(tone(440, SAMPLE_RATE), SAMPLE_RATE))
    assert wav[36:40] == b"data"
    wav[4:8] = (0x7FFFF000).to_bytes(4, "little")
    wav[40:44] = (0x7FFFF000).to_bytes(4, "little")
    samples = decode_wav(bytes(wav))
    assert np.allclose(samples, tone(440, SAMPLE_RATE), atol=2 / 32767)


_HEADER = pcm_wav(tone(440, SAMPLE_RATE, seconds=0.01), SAMPLE_RATE)


@given(
    st.one_of(
        st.binary(max_size=200).map(lambda tail: b"RIFF\x00\x00\x00\x00WAVE" + tail),
        st.lists(st.tuples(st.integers(4, 70), st.integers(0, 255)), max_size=8).map(
            lambda edits: bytes(
                _HEADER[i] if all(i != at for at, _ in edits) else dict(edits)[i]
                for i in range(len(_HEADER))
            )
        ),
        st.integers(0, len(_HEADER)).map(lambda n: _HEADER[:n]),
    )
)
def test_any_broken_wav_is_samples_or_a_voice_error(data: bytes) -> None:
    """Whatever the bytes, the person gets samples or one line: never another exception."""
    try:
        samples = decode_wav(data)
    except VoiceError as exc:
        assert "\n" not in str(exc)
    else:
        assert samples.dtype == np.float32 and samples.ndim == 1 and samples.size > 0
