"""From ``--model`` to a GGUF file on disk: a path, ``hf:REPO[:FILE]``, or the default.

Downloads go through huggingface_hub into its usual cache (``HF_HOME``, with its progress
bar), so a file fetched once is reused, also offline. Every failure is a
:class:`lmc.errors.ModelNotFoundError` whose hint is one paragraph on how to get a model;
huggingface_hub's exceptions are mapped in :func:`hub_errors`, the one place that does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from lmc.errors import LmcError, ModelNotFoundError

__all__ = [
    "DEFAULT_MODEL",
    "HF_PREFIX",
    "check_reachable",
    "hub_errors",
    "parse_hf_spec",
    "resolve_model",
]

HF_PREFIX: Final = "hf:"
#: gpt-oss-20b in MXFP4, as published by ggml-org (about 12 GB).
DEFAULT_MODEL: Final = "hf:ggml-org/gpt-oss-20b-GGUF:gpt-oss-20b-mxfp4.gguf"

NO_MODEL_HINT: Final = (
    "lmc runs OpenAI's gpt-oss models from a GGUF file. On first use it downloads "
    "gpt-oss-20b (about 12 GB, from ggml-org/gpt-oss-20b-GGUF on Hugging Face) into the "
    "Hugging Face cache, which needs network access once; later runs reuse the file offline. "
    "You can instead pass --model PATH.gguf for a file you already have, --model "
    "hf:REPO:FILE for another repository, or --api-base URL to use a model served by vLLM "
    "or llama.cpp's server. Behind a proxy or mirror, set HTTPS_PROXY or HF_ENDPOINT."
)


def parse_hf_spec(spec: str) -> tuple[str, str | None]:
    """``hf:REPO[:FILE]`` -> (repo, file or None)."""
    body = spec[len(HF_PREFIX) :]
    repo, _, filename = body.partition(":")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise ModelNotFoundError(
            f"{spec!r} is not a Hugging Face model: write hf:OWNER/REPO or hf:OWNER/REPO:FILE.gguf",
            hint=NO_MODEL_HINT,
        )
    return repo, filename or None


def resolve_model(spec: str | None) -> Path:
    """The local GGUF file for ``spec`` (a path, ``hf:REPO[:FILE]``, or None: the default)."""
    spec = spec or DEFAULT_MODEL
    if not spec.startswith(HF_PREFIX):
        path = Path(spec).expanduser()
        if path.is_file():
            return path
        what = "is a directory, not a GGUF file" if path.is_dir() else "does not exist"
        raise ModelNotFoundError(f"the model file {path} {what}", hint=NO_MODEL_HINT)
    repo, filename = parse_hf_spec(spec)
    with hub_errors(spec):
        if filename is None:
            filename = _pick_gguf(repo)
        return _download(repo, filename)


def _download(repo: str, filename: str) -> Path:
    """The cached file when there is one (no network needed), else a download."""
    from huggingface_hub import errors, hf_hub_download

    try:
        return Path(hf_hub_download(repo_id=repo, filename=filename, local_files_only=True))
    except errors.LocalEntryNotFoundError:
        pass
    check_reachable()
    return Path(hf_hub_download(repo_id=repo, filename=filename))


def check_reachable() -> None:
    """Fail at once when the hub's host refuses connections or has no route.

    huggingface_hub would retry with backoff for about 25 seconds first. Behind a proxy
    the hub's host is not reached directly, so the check is left to the download itself.
    """
    import os
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants, errors

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    url = urlsplit(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=5):
            pass
    except OSError as exc:
        raise errors.LocalEntryNotFoundError(
            f"{constants.ENDPOINT} cannot be reached: {exc}"
        ) from exc


def _pick_gguf(repo: str) -> str:
    """The repository's one GGUF file (the MXFP4 one when there are several)."""
    from huggingface_hub import HfApi

    cached = _cached_ggufs(repo)
    if len(cached) == 1:
        return cached[0]
    check_reachable()
    files = [f for f in HfApi().list_repo_files(repo) if f.endswith(".gguf")]
    if not files:
        raise ModelNotFoundError(f"hf:{repo} holds no .gguf file", hint=NO_MODEL_HINT)
    preferred = [f for f in files if "mxfp4" in f.lower()]
    if len(files) == 1 or len(preferred) == 1:
        return (preferred or files)[0]
    listing = ", ".join(sorted(files)[:6])
    raise ModelNotFoundError(
        f"hf:{repo} holds several GGUF files ({listing}); name one: hf:{repo}:FILE",
        hint=NO_MODEL_HINT,
    )


def _cached_ggufs(repo: str) -> list[str]:
    """GGUF files of ``repo`` already in the local Hugging Face cache."""
    from huggingface_hub import scan_cache_dir

    try:
        info = scan_cache_dir()
    except Exception:
        return []
    names = {
        file.file_name
        for cached in info.repos
        if cached.repo_id == repo
        for revision in cached.revisions
        for file in revision.files
        if file.file_name.endswith(".gguf")
    }
    return sorted(names)


@contextmanager
def hub_errors(
    spec: str,
    error: type[LmcError] = ModelNotFoundError,
    hint: str = NO_MODEL_HINT,
    *,
    name: str | None = None,
) -> Iterator[None]:
    r"""Map huggingface_hub's (and the network's) exceptions to one-line ``error``\ s.

    Shared by every download lmc makes (the gpt-oss GGUF, the speech model); ``name`` is how
    the offline message names what is missing (default ``spec``).
    """
    from huggingface_hub import errors

    try:
        yield
    except error:
        raise
    except errors.RepositoryNotFoundError as exc:
        raise error(
            f"{spec}: no such repository on the Hugging Face Hub (or it is private)", hint=hint
        ) from exc
    except errors.RevisionNotFoundError as exc:
        raise error(f"{spec}: no such revision", hint=hint) from exc
    except errors.LocalEntryNotFoundError as exc:
        raise error(
            f"{name or spec} is not downloaded yet and the Hugging Face Hub cannot be reached",
            hint=hint,
        ) from exc
    except errors.EntryNotFoundError as exc:
        raise error(f"{spec}: the repository has no such file", hint=hint) from exc
    except errors.HfHubHTTPError as exc:
        raise error(f"downloading {spec} failed: {str(exc).splitlines()[0]}", hint=hint) from exc
    except (OSError, ValueError) as exc:
        raise error(
            f"downloading {spec} failed: {exc.__class__.__name__}: {exc}", hint=hint
        ) from exc
