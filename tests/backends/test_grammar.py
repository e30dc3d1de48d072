"""Function arguments valid by construction: a grammar from the tool's JSON Schema.

The tiny model's output is noise. A replay forces a call's header up to
``<|constrain|>json<|message|>`` and stops there; from then on the random model samples the
arguments freely. Without the grammar they are noise; with it, for every one of 100 seeds,
they parse and match the schema, and the grammar is lifted once the object closes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.backend_testing import user_prompt

from lmc.backends._grammar import JsonObjectEnd, _walk, schema_grammar
from lmc.backends.base import SamplingSettings
from lmc.backends.llama import LlamaCppBackend
from lmc.backends.replay import ReplayScript

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "hourly": {"type": "boolean"},
    },
    "required": ["city", "unit"],
}
SCHEMAS = {"functions.get_weather": WEATHER}
SEEDS = range(100)
HEADERS = [
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    " to=functions.get_weather<|channel|>commentary json<|message|>",
    "<|channel|>commentary to=get_weather <|constrain|>json<|message|>",
]


def _arguments(
    backend: LlamaCppBackend,
    header: str,
    seed: int,
    grammar: bool,
    extra: int = 0,
    limit: int = 400,
) -> tuple[str, Any]:
    """Sample after ``header`` until the arguments' object closes (or ``limit`` characters);
    then ``extra`` tokens more. Returns (the text after the header, the decoded object or None)."""
    backend.replay = ReplayScript([header])
    settings = SamplingSettings(
        seed=seed, max_tokens=200, argument_schemas=SCHEMAS if grammar else None
    )
    generation = backend.generate(user_prompt("weather in Paris?"), settings)
    pieces = iter(generation)
    text, value, after = "", None, -1
    forced = 0
    for piece in pieces:
        if forced < len(header):  # the replayed header
            forced += len(piece.text)
            continue
        text += piece.text
        if after < 0:
            try:
                value, _end = json.JSONDecoder().raw_decode(text.lstrip())
                after = 0
            except ValueError:
                if len(text) > limit:
                    break
                continue
        if after >= extra:
            break
        after += 1
    close = getattr(pieces, "close", None)
    if close is not None:
        close()
    return text, value


def _valid(value: Any) -> bool:
    try:
        jsonschema.validate(value, WEATHER)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.fixture
def backend(make_backend: Callable[..., LlamaCppBackend]) -> LlamaCppBackend:
    return make_backend(None, context_size=512)


def test_with_the_grammar_every_seed_gives_arguments_that_match_the_schema(
    backend: LlamaCppBackend,
) -> None:
    for seed in SEEDS:
        header = HEADERS[seed % len(HEADERS)]
        text, value = _arguments(backend, header, seed, grammar=True)
        assert value is not None and _valid(value), (seed, header, text)


def test_without_it_the_same_seeds_give_noise(backend: LlamaCppBackend) -> None:
    valid = 0
    for seed in SEEDS:
        _text, value = _arguments(backend, HEADERS[0], seed, grammar=False, limit=80)
        valid += value is not None and _valid(value)
    assert valid <= 2


def test_the_grammar_is_lifted_at_the_end_of_the_object(backend: LlamaCppBackend) -> None:
    """After the closing brace the model samples freely again (the grammar would allow
    only blanks there)."""
    tails = []
    for seed in range(10):
        text, value = _arguments(backend, HEADERS[0], seed, grammar=True, extra=6)
        assert _valid(value)
        _value, end = json.JSONDecoder().raw_decode(text.lstrip())
        tails.append(text.lstrip()[end:])
    assert any(tail.strip() for tail in tails), tails


def test_no_grammar_without_a_json_content_type_or_a_schema(backend: LlamaCppBackend) -> None:
    """A header without ``json`` (or naming a tool with no schema) samples freely."""
    for header in (
        "<|channel|>commentary to=functions.get_weather<|message|>",
        "<|channel|>commentary to=functions.other <|constrain|>json<|message|>",
    ):
        valid = sum(
            _valid(_arguments(backend, header, seed, grammar=True, limit=80)[1])
            for seed in range(20)
        )
        assert valid == 0, header


def test_strings_never_hold_raw_control_characters() -> None:
    """JSON forbids them; llama-cpp-python's converter allows them, lmc's rule does not."""
    gbnf = schema_grammar({"type": "object", "properties": {"code": {"type": "string"}}})
    assert gbnf is not None
    assert "\\x00-\\x1F" in gbnf


def test_object_end_scanner_follows_strings_and_nesting() -> None:
    scanner = JsonObjectEnd()
    for part in (b'{"a": "}\\"', b'{", "b": [1, {"c": 2}]', b"}"):
        assert not scanner.done
        scanner.feed(part)
    assert scanner.done


def test_replayed_arguments_outside_the_grammar_lift_it_instead_of_crashing(
    backend: LlamaCppBackend,
) -> None:
    """A replay (or anything not sampled under the grammar) may write arguments the schema
    forbids; llama.cpp aborts on such a token, so the grammar steps aside."""
    completion = HEADERS[0] + 'print("not json")<|call|>'
    backend.replay = ReplayScript([completion])
    generation = backend.generate(
        user_prompt("go"), SamplingSettings(seed=1, argument_schemas=SCHEMAS)
    )
    assert "".join(p.text for p in generation) == completion


@given(st.binary(max_size=12))
def test_the_utf8_automaton_agrees_with_pythons_decoder(data: bytes) -> None:
    """Complete text is accepted exactly when it is valid UTF-8 (no surrogates, no overlong
    forms), and any prefix of valid text is accepted as unfinished."""
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert (_walk(0, data) == 0) == valid
    if valid:
        assert all(_walk(0, data[:k]) is not None for k in range(len(data)))


def test_a_string_argument_is_sampled_freely() -> None:
    """apply_patch's argument is a string (the raw patch, as gpt-oss's reference declares
    it): no grammar is switched on for it even under a json content type, so the raw text
    the model was trained to write can be sampled."""
    from lmc.backends._grammar import ArgumentGrammar

    patch = {"type": "string", "description": "Formatted patch code"}
    grammar = ArgumentGrammar(
        {"functions.apply_patch": patch}, vocab=None, utf8=lambda: pytest.fail("no grammar")
    )
    grammar._maybe_start("functions.apply_patch", "<|constrain|>json")
    assert not grammar.active
    # Without the check a grammar would be made: one for a quoted JSON string, which a raw
    # patch (``*** Begin Patch`` ...) can never be.
    gbnf = schema_grammar(patch)
    assert gbnf is not None and 'root ::= "\\"" char* "\\""' in gbnf
