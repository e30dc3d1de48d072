"""Harmony events to LMC chunks: the chunk shapes of Open Interpreter's streaming response."""

from __future__ import annotations

import json

import pytest

from lmc.harmony.events import Event, MessageStarted
from lmc.harmony.parser import StreamParser, split_markers
from lmc.harmony.to_lmc import LmcMapper, chunk_kind, completion_to_chunks, tool_language
from lmc.messages import Chunk, assemble, text_of, validate_chunk

A = "assistant"


def chunks_for(pieces: list[tuple[str, bool]]) -> list[Chunk]:
    parser = StreamParser()
    mapper = LmcMapper()
    events: list[Event] = []
    for text, special in pieces:
        events += parser.feed(text, special=special)
    events += parser.finish()
    return [chunk for event in events for chunk in mapper.feed(event)]


def tokens(text: str, size: int = 4) -> list[tuple[str, bool]]:
    """Text in pieces of ``size`` characters, markers as special pieces, like a backend."""
    out: list[tuple[str, bool]] = []
    for run, special in split_markers(text):
        if special:
            out.append((run, True))
        else:
            out += [(run[i : i + size], False) for i in range(0, len(run), size)]
    return out


@pytest.mark.parametrize(
    ("recipient", "language"),
    [
        ("python", "python"),
        ("functions.python", "python"),
        ("python code", "python"),
        ("functions.shell", "shell"),
        ("shell", "shell"),
        ("functions.javascript", "javascript"),
        ("functions.r", "r"),
        ("functions.applescript", "applescript"),
        ("functions.html", "html"),
        ("functions.get_weather", None),
        ("browser.search", None),
        ("container.python", None),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_tool_language(recipient: str | None, language: str | None) -> None:
    assert tool_language(recipient) == language


def test_seed_shapes_for_reasoning_code_and_message() -> None:
    text = (
        "<|channel|>analysis<|message|>Compute it.<|end|>"
        "<|start|>assistant<|channel|>commentary to=python code<|message|>34 / 24<|call|>"
    )
    assert chunks_for(tokens(text, 3)) == [
        {"role": A, "type": "reasoning", "start": True},
        {"role": A, "type": "reasoning", "content": "Com"},
        {"role": A, "type": "reasoning", "content": "put"},
        {"role": A, "type": "reasoning", "content": "e i"},
        {"role": A, "type": "reasoning", "content": "t."},
        {"role": A, "type": "reasoning", "end": True},
        {"role": A, "type": "code", "format": "python", "start": True},
        {"role": A, "type": "code", "format": "python", "content": "34 "},
        {"role": A, "type": "code", "format": "python", "content": "/ 2"},
        {"role": A, "type": "code", "format": "python", "content": "4"},
        {"role": A, "type": "code", "format": "python", "end": True},
    ]
    final = "<|channel|>final<|message|>The result is 1.42.<|return|>"
    assert chunks_for(tokens(final, 100)) == [
        {"role": A, "type": "message", "start": True},
        {"role": A, "type": "message", "content": "The result is 1.42."},
        {"role": A, "type": "message", "end": True},
    ]


@pytest.mark.parametrize(
    ("header", "kind"),
    [
        ("<|channel|>analysis", ("reasoning", None)),
        ("<|channel|>commentary", ("message", None)),  # a preamble for the user
        ("<|channel|>final", ("message", None)),
        ("", ("message", None)),
        ("<|channel|>final to=all", ("message", None)),
        ("<|channel|>analysis to=python code", ("code", "python")),  # tool call on analysis
        ("<|channel|>commentary to=functions.shell <|constrain|>json", ("code", "shell")),
        ("<|channel|>commentary to=functions.get_weather json", None),
        ("<|channel|>commentary to=browser.search", ("tool_call", "browser.search")),
        ("<|channel|>analysis to=browser.open json", ("tool_call", "browser.open")),
        ("<|channel|>analysis to=browser.history", None),  # not a browser function
    ],
)
def test_chunk_kind_by_header(header: str, kind: tuple[str, str | None] | None) -> None:
    parser = StreamParser()
    started = parser.feed_text(header + "<|message|>")[0]
    assert isinstance(started, MessageStarted)
    assert chunk_kind(started.header) == kind


def test_other_roles_and_unknown_recipients_give_no_chunks() -> None:
    text = (
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{}<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Oslo"}<|call|>'
        "<|start|>user<|message|>hi<|end|>"
    )
    assert completion_to_chunks(text, role=None) == []


@pytest.mark.parametrize("size", [1, 2, 4, 1000])
def test_json_arguments_stream_their_code_piece_by_piece(size: int) -> None:
    code = 'import os\nprint("caf\u00e9 \U0001f600", os.sep)\n'
    text = (
        "<|channel|>commentary to=functions.python <|constrain|>json<|message|>"
        + json.dumps({"code": code})
        + "<|call|>"
    )
    chunks = chunks_for(tokens(text, size))
    assert chunks[0] == {"role": A, "type": "code", "format": "python", "start": True}
    assert chunks[-1] == {"role": A, "type": "code", "format": "python", "end": True}
    contents = [text_of(c) for c in chunks[1:-1]]
    assert "".join(contents) == code
    assert all(contents)
    if size <= 4:
        assert len(contents) > 10  # streamed, not held back until the end


def test_function_arguments_without_content_type_are_sniffed() -> None:
    json_call = '<|channel|>commentary to=functions.shell<|message|> {"command": "ls"}<|call|>'
    raw_call = "<|channel|>commentary to=functions.shell<|message|>ls -la<|call|>"
    blank_call = "<|channel|>commentary to=functions.shell<|message|>  <|call|>"
    assert assemble(completion_to_chunks(json_call)) == [
        {"role": A, "type": "code", "format": "shell", "content": "ls"}
    ]
    assert assemble(completion_to_chunks(raw_call)) == [
        {"role": A, "type": "code", "format": "shell", "content": "ls -la"}
    ]
    assert assemble(completion_to_chunks(blank_call)) == [
        {"role": A, "type": "code", "format": "shell", "content": "  "}
    ]


def test_builtin_python_content_is_the_code_even_if_it_looks_like_json() -> None:
    text = '<|channel|>analysis to=python code<|message|>{"a": 1}<|call|>'
    assert assemble(completion_to_chunks(text)) == [
        {"role": A, "type": "code", "format": "python", "content": '{"a": 1}'}
    ]


@pytest.mark.parametrize(
    "arguments",
    ['{"path": "x"}', "print('not json')", '{"code": 12}'],
)
def test_json_without_a_code_string_shows_the_arguments(arguments: str) -> None:
    text = f"<|channel|>commentary to=functions.python json<|message|>{arguments}<|call|>"
    for size in (1, 4, 100):
        assert assemble(chunks_for(tokens(text, size))) == [
            {"role": A, "type": "code", "format": "python", "content": arguments}
        ]


def test_every_chunk_is_valid_lmc_and_assembles() -> None:
    text = (
        "<|channel|>analysis<|message|>think<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Let me run it.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.python <|constrain|>json"
        '<|message|>{"code": "1+1"}<|call|>'
    )
    chunks = completion_to_chunks(text)
    for chunk in chunks:
        validate_chunk(chunk)
    assert assemble(chunks) == [
        {"role": A, "type": "reasoning", "content": "think"},
        {"role": A, "type": "message", "content": "Let me run it."},
        {"role": A, "type": "code", "format": "python", "content": "1+1"},
    ]


def test_headerless_refusal_is_a_message() -> None:
    assert assemble(completion_to_chunks("I can't help with that.")) == [
        {"role": A, "type": "message", "content": "I can't help with that."}
    ]


def test_message_cut_at_end_of_stream_still_ends() -> None:
    chunks = completion_to_chunks('<|channel|>commentary to=python<|message|>print("x')
    assert chunks[-1] == {"role": A, "type": "code", "format": "python", "end": True}
    chunks = completion_to_chunks(
        '<|channel|>commentary to=functions.python json<|message|>{"code": "a\\u00'
    )
    assert assemble(chunks) == [
        {"role": A, "type": "code", "format": "python", "content": "a\\u00"}
    ]
