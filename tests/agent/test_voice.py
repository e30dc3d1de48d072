"""Audio messages through the Interpreter: the real faster-whisper model hears espeak-ng's
speech, then the tiny model (replayed) answers the transcript as if it had been typed."""

from __future__ import annotations

import base64
import io
import wave
from pathlib import Path

import pytest
from support.agent_testing import MakeInterpreter
from support.speech import speak

from lmc.agent import Interpreter
from lmc.agent.display import PlainRenderer
from lmc.errors import VoiceError
from lmc.messages import Message, assemble, text_of

FINAL = "<|channel|>final<|message|>{}<|return|>"
QUESTION = "What is seventeen plus twenty five"


@pytest.fixture(scope="module")
def question_wav(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return speak(QUESTION, tmp_path_factory.mktemp("speech") / "question.wav")


def audio(wav: bytes) -> Message:
    content = base64.b64encode(wav).decode("ascii")
    return {"role": "user", "type": "audio", "format": "wav", "content": content}


def heard(text: str) -> list[dict[str, object]]:
    return [
        {"role": "user", "type": "message", "start": True},
        {"role": "user", "type": "message", "content": text},
        {"role": "user", "type": "message", "end": True},
    ]


def test_the_transcript_streams_first_then_the_turn_goes_on_with_it(
    make_interpreter: MakeInterpreter, question_wav: bytes, whisper_model_dir: Path
) -> None:
    interpreter, backend = make_interpreter([FINAL.format("42.")], stt_model=str(whisper_model_dir))
    chunks = list(interpreter.chat(audio(question_wav), stream=True, display=False))
    transcript = text_of(chunks[1])
    assert "17" in transcript and "25" in transcript, transcript
    assert chunks[:3] == heard(transcript)
    assert chunks[3] == {"role": "assistant", "type": "message", "start": True}
    assert assemble(chunks[3:]) == [{"role": "assistant", "type": "message", "content": "42."}]
    user = {"role": "user", "type": "message", "content": transcript}
    assert interpreter.messages == [
        user,
        {"role": "assistant", "type": "message", "content": "42."},
    ]
    # The model read the transcript as the person's message, as if typed.
    assert f"<|start|>user<|message|>{transcript}<|end|>" in backend.prompts[0]
    # ... and it is stored so: a resumed conversation starts with it.
    with Interpreter(
        conversation_id=interpreter.conversation_id,
        db_path=interpreter._db_path,
        backend=backend,
        computer=interpreter.computer,
    ) as resumed:
        assert resumed.messages[0] == user


def test_unstreamed_chat_returns_the_transcript_first_and_displays_it(
    make_interpreter: MakeInterpreter, question_wav: bytes, whisper_model_dir: Path
) -> None:
    out = io.StringIO()
    interpreter, _ = make_interpreter(
        [FINAL.format("42.")], stt_model=str(whisper_model_dir), renderer=PlainRenderer(out)
    )
    messages = interpreter.chat(audio(question_wav))
    transcript = messages[0]["content"]
    assert messages == [
        {"role": "user", "type": "message", "content": transcript},
        {"role": "assistant", "type": "message", "content": "42."},
    ]
    assert out.getvalue() == f"{transcript}\n42.\n"


def test_audio_that_is_not_wav_is_one_line_and_loses_nothing(
    make_interpreter: MakeInterpreter, question_wav: bytes, whisper_model_dir: Path
) -> None:
    interpreter, backend = make_interpreter(
        [FINAL.format("Hello."), FINAL.format("42.")], stt_model=str(whisper_model_dir)
    )
    interpreter.chat("hi", display=False)
    before = list(interpreter.messages)
    ogg = base64.b64encode(b"OggS" + bytes(64)).decode()
    with pytest.raises(VoiceError, match="the audio is Ogg, not WAV") as info:
        interpreter.chat({"role": "user", "type": "audio", "format": "wav", "content": ogg})
    assert "\n" not in str(info.value)
    with pytest.raises(VoiceError, match="not valid base64"):
        interpreter.chat({"role": "user", "type": "audio", "format": "wav", "content": "%%%"})
    assert interpreter.messages == before
    assert len(backend.prompts) == 1
    # The conversation goes on with the next (good) message.
    messages = interpreter.chat(audio(question_wav), display=False)
    assert messages[-1]["content"] == "42."
    assert interpreter.messages[: len(before)] == before


def test_silence_is_an_error_in_the_stream_and_stores_nothing(
    make_interpreter: MakeInterpreter, whisper_model_dir: Path
) -> None:
    interpreter, backend = make_interpreter(
        [FINAL.format("Hello.")], stt_model=str(whisper_model_dir)
    )
    wav = io.BytesIO()
    with wave.open(wav, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(16_000)
        writer.writeframes(bytes(2 * 16_000))
    stream = interpreter.chat(audio(wav.getvalue()), stream=True, display=False)
    with pytest.raises(VoiceError, match="no speech was heard"):
        next(stream)
    assert interpreter.messages == [] and interpreter.conversation_id is None
    assert backend.prompts == []
    # Not stuck in the failed turn: the next message is answered.
    assert interpreter.chat("hi", display=False)[-1]["content"] == "Hello."
