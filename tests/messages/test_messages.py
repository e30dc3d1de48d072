"""LMC chunks and messages: validation, assembly into merged messages, JSON round trip."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmc.errors import LmcError, MessageError
from lmc.messages import (
    FORMATS_BY_TYPE,
    Chunk,
    Message,
    MessageAssembler,
    assemble,
    confirmation_chunk,
    messages_from_json,
    messages_to_json,
    text_of,
    validate_chunk,
    validate_message,
)

SEED_STREAM: list[Chunk] = [
    {"role": "assistant", "type": "code", "format": "python", "start": True},
    {"role": "assistant", "type": "code", "format": "python", "content": "34"},
    {"role": "assistant", "type": "code", "format": "python", "content": " /"},
    {"role": "assistant", "type": "code", "format": "python", "content": " "},
    {"role": "assistant", "type": "code", "format": "python", "content": "24"},
    {"role": "assistant", "type": "code", "format": "python", "end": True},
    confirmation_chunk({"type": "code", "format": "python", "content": "34 / 24"}),
    {"role": "computer", "type": "console", "start": True},
    {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
    {"role": "computer", "type": "console", "format": "output", "content": "1.4166666666666667\n"},
    {"role": "computer", "type": "console", "format": "active_line", "content": None},
    {"role": "computer", "type": "console", "end": True},
    {"role": "assistant", "type": "message", "start": True},
    {"role": "assistant", "type": "message", "content": "The result"},
    {"role": "assistant", "type": "message", "content": " is 1.42."},
    {"role": "assistant", "type": "message", "end": True},
]


def test_seed_stream_assembles_into_three_messages() -> None:
    assert assemble(SEED_STREAM) == [
        {"role": "assistant", "type": "code", "format": "python", "content": "34 / 24"},
        {
            "role": "computer",
            "type": "console",
            "format": "output",
            "content": "1.4166666666666667\n",
        },
        {"role": "assistant", "type": "message", "content": "The result is 1.42."},
    ]


def test_start_flag_separates_messages_of_the_same_kind() -> None:
    chunks: list[Chunk] = [
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": "preamble"},
        {"role": "assistant", "type": "message", "end": True},
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": "final"},
        {"role": "assistant", "type": "message", "end": True},
    ]
    assert [m["content"] for m in assemble(chunks)] == ["preamble", "final"]


def test_flagless_chunks_of_the_same_kind_merge_and_a_new_kind_splits() -> None:
    chunks: list[Chunk] = [
        {"role": "user", "type": "message", "content": "a"},
        {"role": "user", "type": "message", "content": "b"},
        {"role": "assistant", "type": "reasoning", "content": "think"},
        {"role": "user", "type": "message", "content": "c"},
    ]
    assert assemble(chunks) == [
        {"role": "user", "type": "message", "content": "ab"},
        {"role": "assistant", "type": "reasoning", "content": "think"},
        {"role": "user", "type": "message", "content": "c"},
    ]


def test_images_never_merge() -> None:
    image: Chunk = {"role": "computer", "type": "image", "format": "base64.png", "content": "AAAA"}
    assert len(assemble([image, image.copy()])) == 2


def test_assembler_returns_the_message_a_chunk_went_into() -> None:
    assembler = MessageAssembler()
    assert assembler.add({"role": "computer", "type": "console", "start": True}) is None
    first = assembler.add(
        {"role": "computer", "type": "console", "format": "output", "content": "x"}
    )
    second = assembler.add(
        {"role": "computer", "type": "console", "format": "output", "content": "y"}
    )
    assert first is second
    assert second == {"role": "computer", "type": "console", "format": "output", "content": "xy"}


@pytest.mark.parametrize(
    ("chunk", "fragment"),
    [
        ({"role": "robot", "type": "message", "content": "x"}, "unknown LMC role 'robot'"),
        ({"role": "user", "type": "letter", "content": "x"}, "unknown LMC type 'letter'"),
        (
            {"role": "assistant", "type": "code", "format": "cobol", "content": "x"},
            "unknown format 'cobol'",
        ),
        ({"role": "user", "type": "message", "content": 3}, "content must be a string"),
        ({"role": "user", "type": "message", "content": "x", "extra": 1}, "unknown key"),
        ({"role": "user", "type": "message", "start": False}, "can only be true"),
        ("not a dict", "must be an object"),
    ],
)
def test_bad_chunks_get_one_clear_error(chunk: object, fragment: str) -> None:
    with pytest.raises(MessageError, match=fragment) as info:
        validate_chunk(chunk)
    assert isinstance(info.value, LmcError)
    assert "\n" not in str(info.value)


def test_every_seed_format_is_accepted() -> None:
    for kind, formats in FORMATS_BY_TYPE.items():
        for fmt in formats:
            if kind == "confirmation":
                validate_chunk(
                    confirmation_chunk({"type": "code", "format": "python", "content": "1"})
                )
                continue
            content: object = "1"
            if kind == "files":  # lmc's own: a list of changed files
                content = [{"path": "a.py", "change": "modified", "added": 1, "removed": 0}]
            if kind == "job":  # lmc's own: a block handed back as a job
                content = {
                    "job": 1,
                    "language": "shell",
                    "command": "x",
                    "after": 1.0,
                    "input": True,
                }
            chunk = {"role": "computer", "type": kind, "content": content}
            if fmt is not None:
                chunk["format"] = fmt
            assert validate_chunk(chunk) == chunk
    seed_formats = {
        "active_line", "output", "base64", "base64.png", "base64.jpeg", "path", "html",
        "javascript", "python", "r", "applescript", "shell", "wav",
    }  # fmt: skip
    known = {f for formats in FORMATS_BY_TYPE.values() for f in formats}
    assert seed_formats <= known


def test_a_job_chunk_carries_what_was_handed_back() -> None:
    good = {"job": 2, "language": "shell", "command": "sleep 9", "after": 30.0, "input": True}
    chunk = {"role": "computer", "type": "job", "format": "handed_back", "content": good}
    assert validate_chunk(chunk) == chunk
    for bad in ("job 2", {**good, "job": "2"}, {**good, "input": 1}, {"job": 2}):
        with pytest.raises(MessageError, match=r"\{job, language, command, after, input\}"):
            validate_chunk({**chunk, "content": bad})


def test_a_files_chunk_carries_a_list_of_changes() -> None:
    for bad in ("a.py +1 -0", [{"path": "a.py", "change": "renamed"}], [{"change": "added"}]):
        with pytest.raises(MessageError, match=r"list of \{path, change, added, removed\}"):
            validate_chunk(
                {"role": "computer", "type": "files", "format": "changes", "content": bad}
            )


@pytest.mark.parametrize("count", ["1", 1.0, True, False, -1, [1], {"n": 1}])
@pytest.mark.parametrize("field", ["added", "removed"])
def test_a_changed_files_line_counts_are_whole_numbers_or_null(count: object, field: str) -> None:
    good = {"path": "a.py", "change": "modified", "added": 1, "removed": 0}
    chunk = {"role": "computer", "type": "files", "format": "changes"}
    assert validate_chunk({**chunk, "content": [good]})
    assert validate_chunk({**chunk, "content": [{**good, field: None}]})  # a binary file
    with pytest.raises(MessageError, match=r"list of \{path, change, added, removed\}"):
        validate_chunk({**chunk, "content": [{**good, field: count}]})


def test_stored_messages_carry_no_flags() -> None:
    with pytest.raises(MessageError, match="no start/end flags"):
        validate_message({"role": "user", "type": "message", "content": "x", "start": True})


def test_json_round_trip_keeps_unicode_readable() -> None:
    messages: list[Message] = [
        *assemble(SEED_STREAM),
        {"role": "user", "type": "message", "content": "日本語"},
    ]
    text = messages_to_json(messages)
    assert "日本語" in text
    assert messages_from_json(text) == messages


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("{", "not valid JSON"), ('{"a": 1}', "must be a list"), ('[{"role": "x"}]', "role")],
)
def test_bad_json_is_a_message_error(text: str, fragment: str) -> None:
    with pytest.raises(MessageError, match=fragment):
        messages_from_json(text)


_text = st.text(max_size=8)
_content_chunk = st.sampled_from(
    [("user", "message", None), ("assistant", "code", "python"), ("computer", "console", "output")]
).flatmap(
    lambda key: _text.map(
        lambda t: {
            "role": key[0],
            "type": key[1],
            **({"format": key[2]} if key[2] else {}),
            "content": t,
        }
    )
)


@given(st.lists(_content_chunk, max_size=20))
def test_assembly_keeps_all_content_in_order(raw: list[dict[str, str]]) -> None:
    chunks = [validate_chunk(c) for c in raw]
    messages = assemble(chunks)
    assert "".join(map(text_of, messages)) == "".join(c["content"] for c in raw)
    for before, after in itertools.pairwise(messages):
        assert (before["role"], before["type"]) != (after["role"], after["type"]) or before.get(
            "format"
        ) != after.get("format")
    assert json.loads(messages_to_json(messages)) == messages
