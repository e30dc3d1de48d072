"""Speech model resolution: paths, size names, and downloads from a stand-in Hub on loopback.

As ``lmc`` would, resolution runs in a fresh process with ``HF_ENDPOINT`` and ``HF_HOME``
pointing at the test's own hub and cache; the hub serves the real faster-whisper "base" files.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hf_hub import StandInHub, serve_hub

from lmc.errors import SpeechModelNotFoundError
from lmc.voice.resolve import DEFAULT_STT_MODEL, NO_STT_MODEL_HINT, resolve_stt_model

ROOT = Path(__file__).resolve().parents[2]
REPO = "Systran/faster-whisper-base"
DEAD = "http://127.0.0.1:9"  # the discard port: connection refused


@pytest.fixture
def hub(whisper_model_dir: Path) -> Iterator[StandInHub]:
    files = {file.name: file for file in whisper_model_dir.iterdir()}
    files["README.md"] = ROOT / "README.md"  # not a model file: must not be fetched
    with serve_hub({REPO: files}) as running:
        yield running


def resolve_in_process(
    spec: str | None,
    endpoint: str,
    hf_home: Path,
    *,
    transcribe: Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Resolve ``spec`` in a fresh Python (and transcribe a WAV file with the model)."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lmc.voice import resolve_stt_model, transcribe_wav\n"
        "from lmc.errors import LmcError\n"
        "spec = sys.argv[1] or None\n"
        "try:\n"
        "    out = {'path': str(resolve_stt_model(spec))}\n"
        "    if sys.argv[2]:\n"
        "        out['text'] = transcribe_wav(Path(sys.argv[2]).read_bytes(), spec)\n"
        "except LmcError as e:\n"
        "    out = {'error': type(e).__name__, 'message': str(e), 'hint': e.hint}\n"
        "print(json.dumps(out))\n"
    )
    env = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(hf_home),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_ETAG_TIMEOUT": "3",
        "HF_HUB_DOWNLOAD_TIMEOUT": "30",
        "NO_PROXY": "127.0.0.1,localhost",
        "PYTHONPATH": str(ROOT),
    }
    if not progress:
        env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", code, spec or "", str(transcribe or "")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["stderr"] = out.stderr
    return result


def test_the_default_model_is_downloaded_once_with_a_progress_bar_then_reused_offline(
    hub: StandInHub, tmp_path: Path, whisper_model_dir: Path, speech_dir: Path, question_wav: bytes
) -> None:
    home = tmp_path / "hf-home"
    first = resolve_in_process(None, hub.url, home, progress=True)
    path = Path(first["path"])
    assert home in path.parents  # in huggingface_hub's own cache
    assert sorted(hub.downloads()) == [
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.txt",
    ]
    for name in ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt"):
        assert filecmp.cmp(path / name, whisper_model_dir / name, shallow=False), name
    assert "Fetching 4 files" in first["stderr"]  # huggingface_hub's progress bar

    # The hub is unreachable now: the cached model is used, and it hears.
    hub.seen.clear()
    again = resolve_in_process(None, DEAD, home, transcribe=speech_dir / "question.wav")
    assert Path(again["path"]) == path
    assert "17" in again["text"] and "25" in again["text"], again["text"]
    assert hub.seen == []


def test_size_names_and_hf_repos_name_the_same_model(hub: StandInHub, tmp_path: Path) -> None:
    home = tmp_path / "hf-home"
    by_name = resolve_in_process("base", hub.url, home)
    by_repo = resolve_in_process(f"hf:{REPO}", hub.url, home)
    assert by_name["path"] == by_repo["path"]
    assert by_repo["path"] == resolve_in_process(DEFAULT_STT_MODEL, DEAD, home)["path"]


def test_a_repository_the_hub_does_not_have(hub: StandInHub, tmp_path: Path) -> None:
    result = resolve_in_process("hf:nobody/nothing", hub.url, tmp_path / "hf-home")
    assert result["error"] == "SpeechModelNotFoundError"
    assert "no such repository" in result["message"]


def test_no_model_and_no_network_is_one_clear_paragraph(tmp_path: Path) -> None:
    result = resolve_in_process(None, DEAD, tmp_path / "hf-home")
    assert result["error"] == "SpeechModelNotFoundError"
    assert "is not downloaded yet and the Hugging Face Hub cannot be reached" in result["message"]
    assert "\n" not in result["message"]
    assert result["hint"] == NO_STT_MODEL_HINT
    assert "\n" not in NO_STT_MODEL_HINT
    assert (
        "--stt-model PATH" in NO_STT_MODEL_HINT
        and 'pip install "lmc-agent[voice]"' in NO_STT_MODEL_HINT
    )


def test_local_model_directories(whisper_model_dir: Path, tmp_path: Path) -> None:
    assert resolve_stt_model(str(whisper_model_dir)) == whisper_model_dir
    with pytest.raises(SpeechModelNotFoundError, match="does not exist") as info:
        resolve_stt_model(str(tmp_path / "absent"))
    assert info.value.hint == NO_STT_MODEL_HINT
    with pytest.raises(SpeechModelNotFoundError, match="is a file, not a model directory"):
        resolve_stt_model(str(whisper_model_dir / "model.bin"))
    with pytest.raises(SpeechModelNotFoundError, match=r"it has no model\.bin"):
        resolve_stt_model(str(tmp_path))


@pytest.mark.parametrize("spec", ["hf:", "hf:justaname", "hf:a/b/c", "hf:/x"])
def test_bad_hf_specs(spec: str) -> None:
    with pytest.raises(SpeechModelNotFoundError, match="not a Hugging Face model"):
        resolve_stt_model(spec)
