"""The backends' sans-IO helpers: pieces, the token log, replay files, the prefix cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc.backends._pieces import MarkerSplitter, Utf8Pieces
from lmc.backends._prefix_cache import MAGIC, PrefixStateCache, prefix_end
from lmc.backends._token_log import TokenLog
from lmc.backends.base import Piece
from lmc.backends.replay import ReplayScript, format_replay, parse_replay
from lmc.errors import BackendError, ConfigError
from lmc.harmony import tokens

TEXT = "<|channel|>final<|message|>héllo 中文 🎉<|return|>"


def split_bytes(text: str) -> list[Piece]:
    """Feed ``text``'s marker-free parts one byte at a time, markers whole."""
    out = Utf8Pieces()
    pieces: list[Piece] = []
    from lmc.harmony.parser import split_markers

    for part, special in split_markers(text):
        if special:
            pieces += out.special(part)
        else:
            for byte in part.encode():
                piece = out.text(bytes([byte]))
                if piece:
                    pieces.append(piece)
    return pieces + out.flush()


def test_utf8_pieces_hold_back_split_characters() -> None:
    pieces = split_bytes(TEXT)
    assert "".join(p.text for p in pieces) == TEXT
    assert Piece("中") in pieces and Piece("🎉") in pieces
    assert all("\ufffd" not in p.text for p in pieces)


def test_utf8_pieces_flush_an_unfinished_character_before_a_marker() -> None:
    out = Utf8Pieces()
    assert out.text(b"\xe4\xb8") is None
    assert out.special(tokens.END) == [Piece("\ufffd"), Piece(tokens.END, True)]


@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 100])
def test_marker_splitter_any_chunking(step: int) -> None:
    splitter = MarkerSplitter()
    pieces: list[Piece] = []
    for i in range(0, len(TEXT), step):
        pieces += splitter.feed(TEXT[i : i + step])
    pieces += splitter.flush()
    joined = "".join(p.text for p in pieces)
    assert joined == TEXT
    assert [p.text for p in pieces if p.special] == [tokens.CHANNEL, tokens.MESSAGE, tokens.RETURN]
    assert all("<|" not in p.text for p in pieces if not p.special)


def test_marker_splitter_keeps_text_that_only_looks_like_a_marker_start() -> None:
    splitter = MarkerSplitter()
    assert splitter.feed("a <|") == [Piece("a ")]
    assert splitter.feed("x") == [Piece("<|x")]
    assert splitter.feed("<|en") == []
    assert splitter.flush() == [Piece("<|en")]


def make_log(entries: list[tuple[int, bytes, bool]]) -> TokenLog:
    log = TokenLog(m.encode() for m in tokens.SPECIAL_TOKENS)
    for token, data, special in entries:
        log.append(token, data, special=special)
    return log


LOGGED = [
    (1, b"<|start|>", True), (2, b"user", False), (3, b"<|message|>", True),
    (4, b"hi", False), (5, b"<|end|>", True), (1, b"<|start|>", True),
    (6, b"assistant", False), (7, b"<|channel|>", True), (8, b"final", False),
    (3, b"<|message|>", True), (9, b"Hel", False), (10, b"lo", False), (11, b"<|return|>", True),
]  # fmt: skip


def test_token_log_reuses_sampled_ids_up_to_a_following_marker() -> None:
    log = make_log(LOGGED)
    text = log.text()
    # The history re-rendered with <|end|> instead of <|return|>: "Hel" "lo" are kept.
    prompt = text.replace(b"<|return|>", b"<|end|>") + b"<|start|>user"
    ids, offset = log.reusable(prompt)
    assert ids == [t for t, _, _ in LOGGED[:-1]]
    assert prompt[offset:] == b"<|end|><|start|>user"


def test_token_log_cuts_after_a_special_token_when_text_diverges() -> None:
    log = make_log(LOGGED)
    prompt = log.text().replace(b"Hello", b"Help me")
    ids, offset = log.reusable(prompt)
    assert ids == [t for t, _, _ in LOGGED[:10]]
    assert prompt[offset:].startswith(b"Help me")


def test_token_log_whole_and_empty() -> None:
    log = make_log(LOGGED)
    assert log.reusable(log.text()) == ([t for t, _, _ in LOGGED], len(log.text()))
    assert log.reusable(b"something else") == ([], 0)
    log.truncate(3)
    assert log.ids == [1, 2, 3] and log.text() == b"<|start|>user<|message|>"
    assert make_log([]).reusable(b"x") == ([], 0)


def test_replay_parse_and_format_round_trip() -> None:
    completions = ["<|channel|>final<|message|>a\nb<|return|>", "x<|call|>", "\ny<|return|>"]
    text = format_replay(completions)
    assert parse_replay(text) == completions
    assert parse_replay("a<|call|>\r\nb<|return|>\n\n") == ["a<|call|>", "b<|return|>"]


@pytest.mark.parametrize("text", ["", "no stop at all", "a<|call|>trailing text"])
def test_replay_parse_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_replay(text)


def test_replay_format_rejects_a_completion_without_one_final_stop() -> None:
    with pytest.raises(ConfigError, match="completion 2"):
        format_replay(["a<|return|>", "b<|call|>c"])


def test_replay_script_from_file(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("a<|call|>\nb<|return|>\n", encoding="utf-8")
    script = ReplayScript.from_file(path)
    assert (script.take(), script.take(), script.remaining) == ("a<|call|>", "b<|return|>", 0)
    with pytest.raises(BackendError, match="no completion left"):
        script.take()
    with pytest.raises(ConfigError, match="cannot read"):
        ReplayScript.from_file(tmp_path / "missing.txt")
    path.write_bytes(b"\xff\xfe<|call|>")
    with pytest.raises(ConfigError, match="not UTF-8"):
        ReplayScript.from_file(path)


def test_prefix_end() -> None:
    assert prefix_end("<|start|>system<|message|>x<|end|><|start|>user<|message|>") == 34
    assert prefix_end("<|start|>assistant") == 0


def test_prefix_cache_round_trip_and_rejections(tmp_path: Path) -> None:
    cache = PrefixStateCache(tmp_path / "c", "model-a")
    assert cache.load([1, 2, 3]) is None
    path = cache.store([1, 2, 3], b"state bytes")
    assert path is not None and path.read_bytes().startswith(MAGIC)
    assert cache.load([1, 2, 3]) == b"state bytes"
    assert cache.load([1, 2]) is None
    assert PrefixStateCache(tmp_path / "c", "model-b").load([1, 2, 3]) is None
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert cache.load([1, 2, 3]) is None


def test_default_cache_dir_follows_lmc_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmc.backends._prefix_cache import default_cache_dir

    monkeypatch.setenv("LMC_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "prefix-states"
