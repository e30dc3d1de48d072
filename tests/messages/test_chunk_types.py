"""The chunk TypedDicts and the vocabulary the validator checks are the same list of kinds."""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, get_args, get_origin, get_type_hints

import pytest

from lmc.errors import MessageError
from lmc.messages import (
    CODE_FORMATS,
    FORMATS_BY_TYPE,
    Chunk,
    CodeChunk,
    CodeFormat,
    Message,
    assemble,
    confirmation_chunk,
    flag_of,
    validate_chunk,
    validate_message,
    without_flags,
)
from lmc.messages.schema import TOOL_CALL_FORMAT


def _hints(shape: type) -> dict[str, Any]:
    return get_type_hints(shape, include_extras=True)


def _bare(hint: Any) -> Any:
    """``NotRequired[X]`` -> ``X``."""
    return get_args(hint)[0] if get_origin(hint) is NotRequired else hint


def _shapes() -> dict[str, type]:
    shapes: dict[str, type] = {}
    for shape in get_args(Chunk):
        (kind,) = get_args(_hints(shape)["type"])
        assert kind not in shapes, f"two TypedDicts for type {kind!r}"
        shapes[kind] = shape
    return shapes


def test_every_type_has_one_typeddict_and_every_typeddict_a_type() -> None:
    assert set(_shapes()) == set(FORMATS_BY_TYPE)


@pytest.mark.parametrize("kind", sorted(FORMATS_BY_TYPE))
def test_each_typeddict_allows_exactly_the_formats_of_its_type(kind: str) -> None:
    hints = _hints(_shapes()[kind])
    assert set(hints) <= {"role", "type", "format", "content", "start", "end"}
    allowed = FORMATS_BY_TYPE[kind]
    if "format" not in hints:
        assert allowed == (None,)
        return
    declared = _bare(hints["format"])
    if kind == "tool_call":  # "SERVER.TOOL": checked by a pattern; or apply_patch
        assert declared is str and allowed == ("apply_patch",)
        assert TOOL_CALL_FORMAT.fullmatch("files.read_file")
        return
    assert get_origin(declared) is Literal
    assert get_args(declared) == allowed


def test_the_languages_are_declared_once() -> None:
    assert get_args(CodeFormat) == CODE_FORMATS
    assert FORMATS_BY_TYPE["code"] is CODE_FORMATS


def test_flags_and_content_are_optional_in_every_shape() -> None:
    for shape in get_args(Chunk):
        hints = _hints(shape)
        assert _bare(hints["start"]) == Literal[True]
        assert _bare(hints["end"]) == Literal[True]
        assert get_origin(hints["content"]) is NotRequired


def test_validated_chunks_are_the_same_dicts_on_the_wire() -> None:
    block = confirmation_chunk({"type": "tool_call", "format": "fs.read", "content": "{}"})
    assert validate_chunk(block) == block
    assert type(validate_chunk(block)) is dict


def test_a_confirmation_block_is_code_in_a_known_language_or_a_tool_call() -> None:
    for bad in (
        {"type": "code", "format": "cobol", "content": "x"},
        {"type": "image", "format": "python", "content": "x"},
        {"type": "code", "format": "python"},
        {"type": "code", "format": "python", "content": "x", "extra": 1},
    ):
        chunk = {"role": "computer", "type": "confirmation", "format": "execution", "content": bad}
        with pytest.raises(MessageError, match="code block as its content"):
            validate_chunk(chunk)


def test_only_a_console_flag_may_leave_out_its_format() -> None:
    validate_chunk({"role": "computer", "type": "console", "start": True})
    with pytest.raises(MessageError, match="unknown format None for LMC type 'code'"):
        validate_chunk({"role": "assistant", "type": "code", "start": True})


def test_flags_of_a_message_keep_its_role_type_and_format() -> None:
    code: CodeChunk = {"role": "assistant", "type": "code", "format": "shell", "content": "ls"}
    assert flag_of(code, "start") == {
        "role": "assistant",
        "type": "code",
        "format": "shell",
        "start": True,
    }
    ended: CodeChunk = {**code, "end": True}
    message: Message = without_flags(ended)
    assert message == code
    assert validate_message(message) == code


def test_a_message_keeps_the_order_lmc_always_stored_and_sent() -> None:
    chunk = validate_chunk(
        {"content": "hi", "start": True, "format": None, "type": "message", "role": "user"}
    )
    assert json.dumps(assemble([chunk])) == (
        '[{"role": "user", "type": "message", "content": "hi"}]'
    )
    output = validate_chunk(
        {"type": "console", "content": "1\n", "role": "computer", "format": "output"}
    )
    assert list(without_flags(output)) == ["role", "type", "format", "content"]
