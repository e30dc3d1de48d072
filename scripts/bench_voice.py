"""How long lmc takes to hear a spoken sentence, against the sentence's own duration.

espeak-ng says a sentence (about 3 s) into a WAV file; lmc's ``transcribe_wav`` (WAV check,
decode and resample, Silero VAD, faster-whisper, beam 5) hears it with a warm model. The
baseline is the audio's duration: time / duration is the real-time factor (below 1: faster
than speech). Bare faster-whisper (``WhisperModel.transcribe(path)``, its own decoder, no
VAD) runs interleaved on the same model, so lmc's own cost shows as a ratio. Model loading
is timed once, apart.

    python scripts/bench_voice.py --stt-model PATH|hf:REPO|base [--runs 7] [--text "..."]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCE = "What is seventeen plus twenty five? Please answer with a number."


def _speak(text: str, path: Path) -> None:
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        raise SystemExit("bench_voice: espeak-ng is not installed (apt-get install espeak-ng)")
    subprocess.run([espeak, "-v", "en-us", "-s", "150", "-w", str(path), text], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stt-model", default=None, help="as lmc's --stt-model [base]")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--text", default=SENTENCE)
    args = parser.parse_args()

    from lmc.voice import SAMPLE_RATE, decode_wav, resolve_stt_model, transcribe_wav
    from lmc.voice.whisper import load_whisper

    with tempfile.TemporaryDirectory() as tmp:
        wav_path = Path(tmp) / "sentence.wav"
        _speak(args.text, wav_path)
        wav = wav_path.read_bytes()
        duration = decode_wav(wav).size / SAMPLE_RATE

        model_dir = resolve_stt_model(args.stt_model)
        start = time.perf_counter()
        model = load_whisper(model_dir)
        load_s = time.perf_counter() - start

        def bare() -> str:
            segments, _info = model.transcribe(str(wav_path), beam_size=5)
            return " ".join(segment.text.strip() for segment in segments)

        def lmc() -> str:
            return transcribe_wav(wav, args.stt_model)

        texts = {"faster-whisper": bare(), "lmc": lmc()}  # warm both paths
        samples: dict[str, list[float]] = {name: [] for name in texts}
        for _ in range(args.runs):
            for name, run in (("faster-whisper", bare), ("lmc", lmc)):
                start = time.perf_counter()
                run()
                samples[name].append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(args.runs):
            decode_wav(wav)
        decode_ms = (time.perf_counter() - start) / args.runs * 1000

    print(
        f"model: {model_dir} (loaded in {load_s:.2f} s, {model.model.compute_type} on "
        f"{model.model.device})"
    )
    print(f"audio: {duration:.2f} s of espeak-ng speech: {args.text!r}")
    print(f"heard: {texts['lmc']!r}")
    print(f"{'path':<16} {'median':>9} {'min':>9} {'x audio':>8}  ({args.runs} runs each)")
    print(f"{'audio duration':<16} {duration:>8.2f}s {'':>9} {1.0:>8.2f}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:<16} {median:>8.2f}s {min(values):>8.2f}s {median / duration:>8.2f}")
    ratio = statistics.median(samples["lmc"]) / statistics.median(samples["faster-whisper"])
    print(f"lmc / bare faster-whisper: {ratio:.2f}; WAV decode + resample: {decode_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
