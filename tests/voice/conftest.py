"""Voice fixtures: real speech from espeak-ng, said once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.speech import speak

#: A question with numbers, and a sentence with a distinctive word and a number.
QUESTION = "What is seventeen plus twenty five"
GIRAFFE = "How tall is a giraffe with seventeen spots"


@pytest.fixture(scope="session")
def speech_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("speech")


@pytest.fixture(scope="session")
def question_wav(speech_dir: Path) -> bytes:
    return speak(QUESTION, speech_dir / "question.wav")


@pytest.fixture(scope="session")
def giraffe_wav(speech_dir: Path) -> bytes:
    return speak(GIRAFFE, speech_dir / "giraffe.wav")
