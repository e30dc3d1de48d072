"""Real speech (espeak-ng) through the real faster-whisper "base" model."""

from __future__ import annotations

import io
import os
import threading
import wave
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.speech import speak

import lmc.voice.transcribe as transcription
from lmc.errors import SpeechModelNotFoundError, VoiceError
from lmc.voice import load_speech_model, transcribe_wav
from lmc.voice.audio import SAMPLE_RATE
from lmc.voice.whisper import load_whisper


def _wav_48k_stereo(wav: bytes) -> bytes:
    """``wav`` re-encoded by FFmpeg (PyAV) as 48 kHz stereo 24-bit: another rate, width and
    channel count than espeak-ng writes, made by an encoder that is not lmc's."""
    import av

    source = av.open(io.BytesIO(wav), "r")
    buffer = io.BytesIO()
    sink = av.open(buffer, "w", format="wav")
    stream: Any = sink.add_stream("pcm_s24le", rate=48_000, layout="stereo")
    resampler = av.AudioResampler(format="s32", layout="stereo", rate=48_000)
    for frame in [*source.decode(audio=0), None]:
        for converted in resampler.resample(frame):
            for packet in stream.encode(converted):
                sink.mux(packet)
    for packet in stream.encode(None):
        sink.mux(packet)
    sink.close()
    source.close()
    return buffer.getvalue()


def test_the_spoken_words_and_number_come_back(giraffe_wav: bytes, whisper_model_dir: Path) -> None:
    text = transcribe_wav(giraffe_wav, str(whisper_model_dir))
    assert "giraffe" in text.lower()
    assert "17" in text or "seventeen" in text.lower()


def test_another_rate_width_and_channel_count_are_heard_alike(
    question_wav: bytes, whisper_model_dir: Path
) -> None:
    converted = _wav_48k_stereo(question_wav)
    assert converted[:4] == b"RIFF" and len(converted) > 3 * len(question_wav)
    text = transcribe_wav(converted, str(whisper_model_dir))
    assert "17" in text and "25" in text, text


def test_silence_is_no_speech_not_an_invented_phrase(whisper_model_dir: Path) -> None:
    silence = np.zeros(2 * SAMPLE_RATE, np.int16).tobytes()
    wav = io.BytesIO()
    with wave.open(wav, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SAMPLE_RATE)
        writer.writeframes(silence)
    with pytest.raises(VoiceError, match=r"no speech was heard in the audio \(2.0 s\)"):
        transcribe_wav(wav.getvalue(), str(whisper_model_dir))


def test_bad_audio_fails_before_any_model_is_looked_for(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-model-here")
    with pytest.raises(VoiceError, match="not a WAV file"):
        transcribe_wav(b"certainly not a wav file", missing)


class _CancelledAfterTheFirstWindow:
    """The real model, watched: the person cancels as soon as the first 30-second window has
    been decoded (its first segment comes out), while the rest of the audio waits."""

    def __init__(self, model: Any, cancel: threading.Event) -> None:
        self.model, self.cancel = model, cancel
        self.decoded: list[str] = []

    def transcribe(self, *args: Any, **kwargs: Any) -> tuple[Iterator[Any], Any]:
        segments, info = self.model.transcribe(*args, **kwargs)
        return self._watch(segments), info

    def _watch(self, segments: Iterable[Any]) -> Iterator[Any]:
        for segment in segments:  # each later window is decoded only when asked for
            self.decoded.append(segment.text)
            self.cancel.set()
            yield segment


def test_a_transcription_cancelled_while_it_runs_returns_nothing_and_stops(
    whisper_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentences = ["What is seventeen plus twenty five.", "How tall is a giraffe with spots."]
    long_wav = speak(" ".join(sentences * 8), tmp_path / "long.wav")
    assert len(long_wav) / (22_050 * 2) > 40  # speech for two 30-second windows at least
    cancel = threading.Event()
    watched = _CancelledAfterTheFirstWindow(load_whisper(whisper_model_dir), cancel)
    monkeypatch.setattr(transcription, "load_whisper", lambda _directory: watched)
    assert transcribe_wav(long_wav, str(whisper_model_dir), cancel=cancel) == ""
    assert len(watched.decoded) == 1  # the first window's first segment, then nothing more


def test_a_model_is_loaded_once_for_all_threads(whisper_model_dir: Path, tmp_path: Path) -> None:
    """A fresh directory (hard links: no copy) so that the first load races in the threads."""
    fresh = tmp_path / "whisper"
    fresh.mkdir()
    for file in whisper_model_dir.iterdir():
        os.link(file, fresh / file.name)
    start = threading.Barrier(4)
    loaded: list[object] = []

    def load() -> None:
        start.wait()
        loaded.append(load_whisper(fresh))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(loaded) == 4
    assert all(model is loaded[0] for model in loaded)
    assert load_whisper(fresh / ".." / "whisper") is loaded[0]  # the same directory
    assert load_whisper(whisper_model_dir) is not loaded[0]


def test_a_broken_model_is_a_clear_error(tmp_path: Path, whisper_model_dir: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        os.link(whisper_model_dir / name, broken / name)
    (broken / "model.bin").write_bytes(b"not a CTranslate2 model")
    with pytest.raises(SpeechModelNotFoundError, match="cannot load the speech model") as info:
        load_whisper(broken)
    assert "\n" not in str(info.value)


def test_the_speech_model_can_be_loaded_ahead_of_the_first_audio(whisper_model_dir: Path) -> None:
    assert load_speech_model(str(whisper_model_dir)) == whisper_model_dir
    model = load_whisper(whisper_model_dir)
    assert load_whisper(whisper_model_dir) is model  # kept for the process


def test_two_threads_hear_two_sentences_at_once_with_one_model(
    question_wav: bytes, giraffe_wav: bytes, whisper_model_dir: Path
) -> None:
    """What a server with two talking clients does: each gets its own words back."""
    heard: dict[str, str] = {}
    start = threading.Barrier(2)

    def hear(name: str, wav: bytes) -> None:
        start.wait()
        heard[name] = transcribe_wav(wav, str(whisper_model_dir))

    threads = [
        threading.Thread(target=hear, args=("question", question_wav)),
        threading.Thread(target=hear, args=("giraffe", giraffe_wav)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert "17" in heard["question"] and "25" in heard["question"], heard
    assert "giraffe" in heard["giraffe"].lower() and "25" not in heard["giraffe"], heard
