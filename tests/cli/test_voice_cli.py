"""``lmc run --audio``: espeak-ng's speech, heard by the real faster-whisper model, answered
by the tiny model (replayed), through typer's CliRunner with stdout and stderr apart."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cli_replays import code, final
from support.speech import speak
from typer.testing import CliRunner, Result

from lmc.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
Replay = Callable[..., Path]


def _run(env: dict[str, str], *args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env, input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def question(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("speech") / "question.wav"
    speak("What is seventeen plus twenty five", path)
    return path


def _transcript(stdout: str) -> str:
    first = stdout.splitlines()[0]
    assert first.startswith("> "), stdout
    return first[2:]


def test_run_audio_hears_the_question_and_answers_it(
    lmc_env: dict[str, str],
    tiny_model: Path,
    replay: Replay,
    question: Path,
    whisper_model_dir: Path,
) -> None:
    path = replay(code("17 + 25"), final("17 plus 25 is 42."))
    result = _run(
        lmc_env, "run", "--audio", str(question), "--stt-model", str(whisper_model_dir),
        "-m", str(tiny_model), "--replay", str(path), "-y",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    transcript = _transcript(result.stdout)
    assert "17" in transcript and "25" in transcript
    assert result.stdout == (
        f"> {transcript}\n\n```python\n17 + 25\n```\n42\n17 plus 25 is 42.\n\n"
    )
    assert result.stderr == ""
    history = _run(lmc_env, "history")
    assert transcript in history.stdout  # stored under what was said


def test_run_audio_json_emits_the_transcript_as_user_chunks(
    lmc_env: dict[str, str],
    tiny_model: Path,
    replay: Replay,
    question: Path,
    whisper_model_dir: Path,
) -> None:
    path = replay(final("42."))
    result = _run(
        lmc_env, "run", "--json", "--audio", str(question), "--stt-model", str(whisper_model_dir),
        "-m", str(tiny_model), "--replay", str(path),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    transcript = chunks[1].get("content", "")
    assert "17" in transcript and "25" in transcript
    assert chunks[:3] == [
        {"role": "user", "type": "message", "start": True},
        {"role": "user", "type": "message", "content": transcript},
        {"role": "user", "type": "message", "end": True},
    ]
    assert chunks[3] == {"role": "assistant", "type": "message", "start": True}


def test_the_stt_model_comes_from_the_config_file_and_audio_from_stdin(
    lmc_env: dict[str, str],
    tiny_model: Path,
    replay: Replay,
    question: Path,
    whisper_model_dir: Path,
) -> None:
    config = Path(lmc_env["LMC_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'stt_model = "{whisper_model_dir}"\n', encoding="utf-8")
    path = replay(final("42."))
    result = _run(
        lmc_env, "run", "--audio", "-", "-m", str(tiny_model), "--replay", str(path),
        input=question.read_bytes(),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "17" in _transcript(result.stdout)
    assert result.stdout.endswith("\n42.\n\n")


def test_a_file_that_is_not_wav_is_one_line_before_any_model_loads(
    lmc_env: dict[str, str], tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("what is 17 plus 25?\n", encoding="utf-8")
    absent = tmp_path / "absent.gguf"  # never opened: the audio is refused first
    result = _run(lmc_env, "run", "--audio", str(notes), "-m", str(absent))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"lmc: error: {notes}: the audio is not a WAV file "
        "(it starts with b'what is 17 p', not RIFF....WAVE)\n"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--audio", "/nonexistent/q.wav"], "cannot read the audio file /nonexistent/q.wav"),
        (["--audio", "QUESTION", "and a prompt"], "give a prompt or --audio FILE, not both"),
    ],
)
def test_bad_audio_usage(
    lmc_env: dict[str, str], question: Path, args: list[str], error: str
) -> None:
    args = [str(question) if arg == "QUESTION" else arg for arg in args]
    result = _run(lmc_env, "run", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"lmc: error: {error}") and result.stderr.count("\n") == 1


def test_a_missing_speech_model_is_an_error_and_a_hint(
    lmc_env: dict[str, str], tiny_model: Path, replay: Replay, question: Path, tmp_path: Path
) -> None:
    path = replay(final("42."))
    result = _run(
        lmc_env, "run", "--audio", str(question), "--stt-model", str(tmp_path / "nowhere"),
        "-m", str(tiny_model), "--replay", str(path),
    )  # fmt: skip
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == f"lmc: error: the speech model {tmp_path / 'nowhere'} does not exist"
    assert lines[1].startswith("lmc: hint: lmc hears speech with faster-whisper")
    assert len(lines) == 2


def test_help_imports_no_speech_library() -> None:
    probe = (
        "import sys\n"
        "sys.argv = ['lmc', 'run', '--help']\n"
        "from lmc.cli.app import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy = {'faster_whisper', 'ctranslate2', 'av', 'onnxruntime', 'numpy', 'tokenizers'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert "--audio FILE.wav" in result.stdout and "--stt-model MODEL" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_doctor_says_which_speech_model_would_hear(
    lmc_env: dict[str, str], tiny_model: Path, whisper_model_dir: Path, tmp_path: Path
) -> None:
    from support.hf_hub import serve_hub

    env = {**lmc_env, "HF_HOME": str(tmp_path / "hf-home")}
    files = {"model.bin": whisper_model_dir / "model.bin"}
    with serve_hub({"Systran/faster-whisper-base": files}) as hub:  # not downloaded: asked
        default = _run({**env, "HF_ENDPOINT": hub.url}, "doctor", "-m", str(tiny_model))
    assert default.exit_code == 0, default.stdout
    assert (
        "✓ stt model    hf:Systran/faster-whisper-base (fetched on first use, the Hub answers)"
        in default.stdout
    )
    unreachable = _run(
        {**env, "HF_ENDPOINT": "http://127.0.0.1:9"}, "doctor", "-m", str(tiny_model)
    )
    assert unreachable.exit_code == 0  # voice is optional: it informs, it does not fail the check
    assert (
        "✗ stt model    hf:Systran/faster-whisper-base (not downloaded yet, and the Hugging "
        in (unreachable.stdout)
    )
    chosen = _run({**env, "LMC_STT_MODEL": str(whisper_model_dir)}, "doctor", "-m", str(tiny_model))
    assert f"✓ stt model    {whisper_model_dir}\n" in chosen.stdout
    missing = _run({**env, "LMC_STT_MODEL": str(tmp_path)}, "doctor", "-m", str(tiny_model))
    assert missing.exit_code == 0  # voice is optional: it informs, it does not fail the check
    assert f"✗ stt model    {tmp_path} (no model.bin there)" in missing.stdout
