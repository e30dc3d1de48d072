"""A spoken question over the websocket: espeak-ng says it, faster-whisper (the real "base"
model, assembled by the ``whisper_model_dir`` fixture) hears it, the model answers."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest
from support.server_testing import Served, final, is_complete
from support.speech import speak

QUESTION = "What is seventeen plus twenty five"


@pytest.fixture(scope="module")
def question_wav(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return speak(QUESTION, tmp_path_factory.mktemp("speech") / "question.wav")


def heard(text: str) -> bool:
    lowered = text.lower()
    return ("17" in lowered or "seventeen" in lowered) and ("25" in lowered or "twenty" in lowered)


@pytest.mark.parametrize("carried", ["binary frames", "base64 content"])
def test_a_spoken_question_is_heard_shown_and_answered(
    serve: Callable[..., Served], whisper_model_dir: Path, question_wav: bytes, carried: str
) -> None:
    served = serve(final("It is 42."), stt_model=str(whisper_model_dir))
    client = served.client()
    client.send({"role": "user", "type": "audio", "format": "wav", "start": True})
    if carried == "binary frames":
        half = len(question_wav) // 2
        client.send(question_wav[:half])
        client.send(question_wav[half:])
    else:
        encoded = base64.b64encode(question_wav).decode()
        half = len(encoded) // 2 // 4 * 4
        client.send({"role": "user", "type": "audio", "format": "wav", "content": encoded[:half]})
        client.send({"role": "user", "type": "audio", "format": "wav", "content": encoded[half:]})
    client.send({"role": "user", "type": "audio", "format": "wav", "end": True})
    chunks = client.until(is_complete)
    # The transcript comes back first, as the person's message chunks.
    assert chunks[0] == {"role": "user", "type": "message", "start": True}
    transcript = chunks[1]
    assert transcript["role"] == "user" and transcript["type"] == "message"
    assert heard(transcript["content"]), transcript
    assert chunks[2] == {"role": "user", "type": "message", "end": True}
    answer = "".join(
        c.get("content", "") for c in chunks if c["role"] == "assistant" and c["type"] == "message"
    )
    assert answer == "It is 42."
    # Stored as what was heard.
    assert served.interpreters[0].messages[0] == {
        "role": "user",
        "type": "message",
        "content": transcript["content"],
    }
    client.close()


def test_raw_pcm_as_the_01_client_streams_it_is_heard(
    serve: Callable[..., Served], whisper_model_dir: Path, question_wav: bytes
) -> None:
    """``format: "bytes.wav"`` and raw 16-bit mono PCM at 16 kHz in 2,048-byte binary frames,
    as OpenInterpreter/01's ``software/source/clients/base_device.py`` sends a recording
    (``CHUNK = 1024`` samples of ``paInt16``, ``RECORDING_RATE = 16000``)."""
    import io
    import wave

    import numpy as np

    with wave.open(io.BytesIO(question_wav)) as spoken:
        rate = spoken.getframerate()
        samples = np.frombuffer(spoken.readframes(spoken.getnframes()), dtype="<i2")
    times = np.arange(0, len(samples) / rate, 1 / 16_000)
    pcm = np.interp(times, np.arange(len(samples)) / rate, samples).astype("<i2").tobytes()
    served = serve(final("It is 42."), stt_model=str(whisper_model_dir))
    client = served.client()
    client.send({"role": "user", "type": "audio", "format": "bytes.wav", "start": True})
    for at in range(0, len(pcm), 2048):
        client.send(pcm[at : at + 2048])
    client.send({"role": "user", "type": "audio", "format": "bytes.wav", "end": True})
    chunks = client.until(is_complete)
    assert heard(chunks[1]["content"]), chunks[1]
    client.close()
