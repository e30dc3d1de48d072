"""Speech to text with faster-whisper: WAV audio in, the words that were said out.

Nothing heavy is imported here: numpy and faster_whisper are imported when audio is decoded
or a model is loaded. Install the extra with ``pip install "lmc-agent[voice]"``.
"""

from lmc.voice.audio import SAMPLE_RATE, audio_message, check_wav, decode_wav, wav_from_base64
from lmc.voice.resolve import DEFAULT_STT_MODEL, NO_STT_MODEL_HINT, resolve_stt_model
from lmc.voice.transcribe import load_speech_model, transcribe_wav

__all__ = [
    "DEFAULT_STT_MODEL",
    "NO_STT_MODEL_HINT",
    "SAMPLE_RATE",
    "audio_message",
    "check_wav",
    "decode_wav",
    "load_speech_model",
    "resolve_stt_model",
    "transcribe_wav",
    "wav_from_base64",
]
