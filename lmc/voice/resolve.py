"""From ``--stt-model`` to a faster-whisper model directory: a path, ``hf:REPO``, a size name.

Like the gpt-oss GGUF (:mod:`lmc.backends.resolve`), a model from the Hub is downloaded once
through huggingface_hub into its usual cache (``HF_HOME``, with its progress bars) and reused
from there, also offline. Every failure is a :class:`lmc.errors.SpeechModelNotFoundError`
whose hint is one paragraph on how to get a model; huggingface_hub's exceptions are mapped in
:func:`lmc.backends.resolve.hub_errors`, the one place that does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from lmc.errors import SpeechModelNotFoundError

__all__ = [
    "DEFAULT_STT_MODEL",
    "MODEL_FILES",
    "NO_STT_MODEL_HINT",
    "SIZE_NAMES",
    "resolve_stt_model",
]

HF_PREFIX: Final = "hf:"
#: faster-whisper "base" (CTranslate2, float16, about 145 MB), multilingual.
DEFAULT_STT_MODEL: Final = "hf:Systran/faster-whisper-base"
#: Size names faster-whisper knows, all published as ``Systran/faster-whisper-NAME``.
SIZE_NAMES: Final = (
    "tiny",
    "tiny.en",
    "base",
    "base.en",
    "small",
    "small.en",
    "medium",
    "medium.en",
    "large-v1",
    "large-v2",
    "large-v3",
)
#: What a faster-whisper model directory holds (the files faster-whisper itself downloads).
MODEL_FILES: Final = (
    "config.json",
    "preprocessor_config.json",
    "model.bin",
    "tokenizer.json",
    "vocabulary.*",
)

NO_STT_MODEL_HINT: Final = (
    'lmc hears speech with faster-whisper (the voice extra: pip install "lmc-agent[voice]", '
    "or from a clone: pip install '.[voice]'). On first use it "
    'downloads the faster-whisper "base" model (about 145 MB, from Systran/faster-whisper-base '
    "on Hugging Face) into the Hugging Face cache, which needs network access once; later runs "
    "reuse it offline. You can instead pass --stt-model PATH for a faster-whisper (CTranslate2) "
    "model directory you already have, --stt-model hf:OWNER/REPO for another repository, or a "
    f"size name ({', '.join(n for n in SIZE_NAMES if '.' not in n)}; .en for English only). "
    "Behind a proxy or mirror, set HTTPS_PROXY or HF_ENDPOINT."
)


def resolve_stt_model(spec: str | None) -> Path:
    """The local model directory for ``spec`` (a path, ``hf:REPO``, a size name, or None)."""
    spec = spec or DEFAULT_STT_MODEL
    if spec in SIZE_NAMES:
        spec = f"{HF_PREFIX}Systran/faster-whisper-{spec}"
    if not spec.startswith(HF_PREFIX):
        return _local_model(Path(spec).expanduser())
    repo = spec[len(HF_PREFIX) :]
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise SpeechModelNotFoundError(
            f"{spec!r} is not a Hugging Face model: write hf:OWNER/REPO", hint=NO_STT_MODEL_HINT
        )
    from lmc.backends.resolve import hub_errors

    with hub_errors(
        spec, SpeechModelNotFoundError, NO_STT_MODEL_HINT, name=f"the speech model {spec}"
    ):
        return _download(repo)


def _local_model(path: Path) -> Path:
    if not path.is_dir():
        what = "is a file, not a model directory" if path.exists() else "does not exist"
        raise SpeechModelNotFoundError(f"the speech model {path} {what}", hint=NO_STT_MODEL_HINT)
    if not (path / "model.bin").is_file():
        raise SpeechModelNotFoundError(
            f"{path} is not a faster-whisper model directory: it has no model.bin",
            hint=NO_STT_MODEL_HINT,
        )
    return path


def _download(repo: str) -> Path:
    """The cached snapshot when it is complete (no network needed), else a download."""
    from huggingface_hub import errors, snapshot_download

    from lmc.backends.resolve import check_reachable

    try:
        cached = Path(
            snapshot_download(repo_id=repo, allow_patterns=list(MODEL_FILES), local_files_only=True)
        )
        if (cached / "model.bin").is_file():
            return cached
    except errors.LocalEntryNotFoundError:
        pass
    check_reachable()
    path = Path(snapshot_download(repo_id=repo, allow_patterns=list(MODEL_FILES)))
    if not (path / "model.bin").is_file():
        raise SpeechModelNotFoundError(
            f"hf:{repo} is not a faster-whisper model: it has no model.bin",
            hint=NO_STT_MODEL_HINT,
        )
    return path
