"""Real speech for tests: ``from support.speech import speak``.

espeak-ng (Debian's ``espeak-ng`` package; CI installs it) says a sentence into a WAV file:
16-bit mono PCM at 22 050 Hz, so everything that hears it also resamples.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

__all__ = ["ESPEAK", "speak"]

ESPEAK = shutil.which("espeak-ng")


def speak(text: str, path: Path, *, words_per_minute: int = 150) -> bytes:
    """Say ``text`` into the WAV file ``path``; returns its bytes."""
    if ESPEAK is None:
        raise RuntimeError("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    subprocess.run(
        [ESPEAK, "-v", "en-us", "-s", str(words_per_minute), "-w", str(path), text],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return path.read_bytes()
