"""The incremental JSON string decoder and field streamer, checked against json.loads."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmc.harmony.json_string import JsonFieldStreamer, JsonStringDecoder

CODE = 'print("h\\u00e9 😀")\n\tx = {"a": [1, "\\\\"]}  # \u2028 /'


def stream(text: str, size: int, fields: tuple[str, ...] = ("code",)) -> tuple[str, bool]:
    streamer = JsonFieldStreamer(fields)
    out = [streamer.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(out) + streamer.finish(), streamer.found


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 1000])
def test_code_field_decoded_for_every_piece_size(size: int) -> None:
    text = json.dumps({"code": CODE})
    assert stream(text, size) == (CODE, True)
    text = json.dumps({"code": CODE}, ensure_ascii=False)
    assert stream(text, size) == (CODE, True)


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_other_fields_before_the_code_are_skipped(size: int) -> None:
    args = {
        "timeout": 1.5,
        "flags": [{"x": '}]\\"'}, None, True],
        "note": 'not "code" here',
        "command": "ls -la",
        "code": "never",
    }
    assert stream(json.dumps(args), size, ("code", "command")) == ("ls -la", True)


def test_surrogate_pair_split_anywhere_joins() -> None:
    text = '{"code": "\\ud83d\\ude00"}'
    for cut in range(len(text)):
        streamer = JsonFieldStreamer()
        assert streamer.feed(text[:cut]) + streamer.feed(text[cut:]) == "😀", cut


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        ('\\ud83d"', "\ufffd"),  # a high surrogate alone
        ('\\ude00"', "\ufffd"),  # a low surrogate alone
        ('\\ud83dx"', "\ufffdx"),
        ('\\ud83d\\n"', "\ufffd\n"),
        ('\\ud83d\\u0041"', "\ufffdA"),
        ('\\q"', "\\q"),  # an invalid escape is kept as written
        ('\\u12g4"', "\\u12g4"),
        ('a\\"b"', 'a"b'),
    ],
)
def test_broken_escapes_never_raise(body: str, decoded: str) -> None:
    decoder = JsonStringDecoder()
    assert decoder.feed(body) == (decoded, len(body))
    assert decoder.done


def test_decoder_reports_where_the_string_ends() -> None:
    decoder = JsonStringDecoder()
    assert decoder.feed("ab\\") == ("ab", 3)
    assert decoder.feed('"c", "rest"') == ('"c', 3)
    assert decoder.done


def test_unfinished_string_gives_pending_escape_at_finish() -> None:
    streamer = JsonFieldStreamer()
    assert streamer.feed('{"code": "x\\u00') == "x"
    assert streamer.finish() == "\\u00"


@pytest.mark.parametrize("text", ["print(1)", "[1, 2]", '{"code": 3}', '{"x" 1}', '{"a": 1 2}'])
def test_not_an_object_with_a_code_string(text: str) -> None:
    streamer = JsonFieldStreamer()
    assert streamer.feed(text) == ""
    assert not streamer.found
    assert streamer.done


@settings(max_examples=150, deadline=None)
@given(
    value=st.text(st.characters(codec="utf-8")),
    other=st.dictionaries(st.text(max_size=5), st.text(max_size=5)),
    data=st.data(),
)
def test_any_string_value_streams_back_exactly(
    value: str, other: dict[str, str], data: st.DataObject
) -> None:
    other.pop("code", None)
    text = json.dumps({**other, "code": value}, ensure_ascii=data.draw(st.booleans()))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    streamer = JsonFieldStreamer(("code",))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert "".join(streamer.feed(p) for p in pieces) + streamer.finish() == json.loads(text)["code"]
