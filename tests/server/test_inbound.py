"""The protocol reader on its own: frames in, actions out (no socket)."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmc.server.inbound import Begin, Command, Inbound, Problem, UserAudio, UserText, is_wav

WAV = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + b"\x00" * 24


def frame(**fields: Any) -> str:
    return json.dumps({"role": "user", **fields})


def test_a_message_in_chunks_and_in_one_frame() -> None:
    reader = Inbound()
    assert reader.text(frame(type="message", start=True)) == [Begin()]
    assert reader.text(frame(type="message", content="Hel")) == []
    assert reader.text(frame(type="message", content="lo")) == []
    assert reader.text(frame(type="message", end=True)) == [UserText("Hello")]
    assert reader.text(frame(type="message", content="whole")) == [Begin(), UserText("whole")]
    assert reader.text(frame(type="message", start=True, content="a", end=True)) == [
        Begin(),
        UserText("a"),
    ]


def test_audio_as_binary_frames_or_base64() -> None:
    reader = Inbound()
    assert reader.text(frame(type="audio", format="wav", start=True)) == [Begin()]
    assert reader.binary(WAV[:10]) == []
    assert reader.binary(WAV[10:]) == []
    assert reader.text(frame(type="audio", format="wav", end=True)) == [UserAudio(WAV)]
    encoded = base64.b64encode(WAV).decode()
    assert reader.text(frame(type="audio", format="wav", content=encoded)) == [
        Begin(),
        UserAudio(WAV),
    ]


def test_commands_bare_or_wrapped() -> None:
    reader = Inbound()
    assert reader.text(frame(type="command", start=True)) == []
    assert reader.text(frame(type="command", content="go")) == [Command("go")]
    assert reader.text(frame(type="command", end=True)) == []
    for name in ("decline", "stop"):
        assert reader.text(frame(type="command", content=name)) == [Command(name)]


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("{", "not JSON"),
        ("null", "JSON object"),
        (frame(type="message", content=["x"]), "must be a string"),
        (json.dumps({"role": "computer", "type": "message", "content": "x"}), "unknown role"),
        (frame(type="image", content="x"), "unknown type"),
        (frame(type="audio", format="ogg", start=True), "must be wav"),
        (frame(type="message", end=True), "never started"),
        (frame(type="message"), "needs content"),
        (frame(type="command", content="run"), "unknown command"),
        (json.dumps({"auth": "again"}), "already authenticated"),
    ],
)
def test_bad_frames_are_one_line_problems(sent: str, expected: str) -> None:
    [problem] = Inbound().text(sent)
    assert isinstance(problem, Problem) and expected in problem.text
    assert "\n" not in problem.text


def test_limits_drop_what_was_assembled_and_the_reader_goes_on() -> None:
    reader = Inbound(max_bytes=100)
    assert reader.text(frame(type="message", start=True)) == [Begin()]
    assert reader.text(frame(type="message", content="x" * 45)) == []
    assert reader.text(frame(type="message", content="y" * 45)) == []
    [problem] = reader.text(frame(type="message", content="z" * 45))  # 135 assembled
    assert isinstance(problem, Problem) and "too large" in problem.text
    assert reader.text(frame(type="message", start=True)) == [Begin()]
    [problem] = reader.text(frame(type="message", content="z" * 101))  # the frame itself
    assert isinstance(problem, Problem) and "too large" in problem.text
    [problem] = reader.text(frame(type="message", end=True))  # the message was dropped
    assert isinstance(problem, Problem) and "never started" in problem.text
    [problem] = reader.binary(b"x" * 101)
    assert isinstance(problem, Problem) and "too large" in problem.text
    assert reader.text(frame(type="message", content="ok")) == [Begin(), UserText("ok")]


def test_audio_that_is_not_wav_is_refused_at_its_end() -> None:
    reader = Inbound()
    reader.text(frame(type="audio", format="wav", start=True))
    reader.binary(b"ID3\x03 not a wav at all")
    [problem] = reader.text(frame(type="audio", format="wav", end=True))
    assert isinstance(problem, Problem) and "not a wav" in problem.text
    assert is_wav(WAV) and not is_wav(b"RIFF")
    [problem] = reader.binary(WAV)  # the audio message is over
    assert isinstance(problem, Problem) and "binary frame" in problem.text


# Any JSON a client can send, nested, with odd strings (lone surrogates included) and numbers.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text()
    | st.sampled_from(["user", "message", "audio", "command", "go", "wav", "bytes.wav", "\ud800"])
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["role", "type", "format", "content", "start", "end", "auth", "x"]),
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_json | st.binary(max_size=64), min_size=1, max_size=8))
def test_no_frame_makes_the_reader_raise(frames: list[Any]) -> None:
    reader = Inbound(max_bytes=1_000)
    for sent in frames:
        is_binary = isinstance(sent, bytes)
        actions = reader.binary(sent) if is_binary else reader.text(json.dumps(sent))
        for action in actions:
            if isinstance(action, Problem):
                assert "\n" not in action.text and len(action.text) < 200
                action.text.encode("utf-8")  # sendable as it is
    # Whatever was left open, a whole new message is read as it is.
    whole = frame(type="message", start=True, content="ok", end=True)
    assert reader.text(whole)[-2:] == [Begin(), UserText("ok")]


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"role": "user", "content": ' + "1" * 5_000 + "}", "digits"),
        (frame(type="message", content="\ud800"), "lone surrogate"),
        ('{"role": "\\udfff"}', "unknown role '\\udfff'"),
    ],
)
def test_frames_that_broke_the_server_are_problems(sent: str, expected: str) -> None:
    [problem] = Inbound().text(sent)
    assert isinstance(problem, Problem) and expected in problem.text
