"""Function arguments sampled under a grammar built from the tool's JSON Schema.

Theory of operation
-------------------
:class:`ArgumentGrammar` watches the tokens a generation samples through a Harmony
:class:`~lmc.harmony.parser.StreamParser`. When a message starts whose header names a tool
with a schema and a JSON content type (``... to=functions.x <|constrain|>json<|message|>``,
or `` json``), it switches on a llama.cpp grammar sampler made from that schema (GBNF from
llama-cpp-python's json-schema-to-grammar), and :meth:`apply` narrows each step's candidates
to the tokens the grammar allows. Each sampled token is accepted into the grammar, and its
bytes go to a small scanner that follows JSON nesting; when the top-level object closes the
grammar is lifted, so the model ends the call (``<|call|>``) as it likes. A message that ends
first lifts it too. Work per token is the grammar's (proportional to the candidates), plus
constant bookkeeping.

Only this module and :mod:`lmc.backends.llama` touch the grammar sampler; schemas the
converter cannot handle fall back to free sampling (the loop still checks the arguments).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from lmc.backends import _llama_cpp as llama
from lmc.harmony.events import MessageEnded, MessageStarted
from lmc.harmony.parser import StreamParser

__all__ = ["ArgumentGrammar", "JsonObjectEnd", "Utf8Filter", "schema_grammar"]

# llama-cpp-python's converter lets raw control characters into strings, which JSON forbids.
_CHAR_RULE: Final = re.compile(r'^char ::= \[\^"\\\\\]', re.MULTILINE)
_STRICT_CHAR: Final = r'char ::= [^"\\\x7F\x00-\x1F]'
_GBNF_CACHE: dict[str, str | None] = {}


def schema_grammar(schema: Mapping[str, Any]) -> str | None:
    """GBNF for JSON values matching ``schema``, or None when it cannot be converted."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _GBNF_CACHE:
        try:
            gbnf = llama.json_schema_to_gbnf(key)
        except Exception:  # the converter raises anything on schemas it does not know
            gbnf = None
        if gbnf is not None:
            gbnf = _CHAR_RULE.sub(lambda _: _STRICT_CHAR, gbnf)
        _GBNF_CACHE[key] = gbnf
    return _GBNF_CACHE[key]


class JsonObjectEnd:
    """Follows bytes of one JSON value; :attr:`done` once its top-level object has closed."""

    def __init__(self) -> None:
        self.done = False
        self._depth = 0
        self._in_string = False
        self._escaped = False

    def feed(self, data: bytes) -> None:
        for byte in data:
            if self.done:
                return
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif byte == 0x5C:  # backslash
                    self._escaped = True
                elif byte == 0x22:  # quote
                    self._in_string = False
            elif byte == 0x22:
                self._in_string = True
            elif byte in (0x7B, 0x5B):  # { [
                self._depth += 1
            elif byte in (0x7D, 0x5D):  # } ]
                self._depth -= 1
                if self._depth <= 0:
                    self.done = True


#: What the next byte may be, as (continuation bytes owed, lowest, highest): nothing owed,
#: then 1, 2 or 3 owed, and the leads whose next byte has a narrower range (E0, ED, F0, F4;
#: RFC 3629's table, so no overlong forms and no surrogates).
_RULES: Final = (
    (0, 0, 0),
    (1, 0x80, 0xBF),
    (2, 0x80, 0xBF),
    (2, 0xA0, 0xBF),
    (2, 0x80, 0x9F),
    (3, 0x80, 0xBF),
    (3, 0x90, 0xBF),
    (3, 0x80, 0x8F),
)
_CONTINUATION: Final = (0x80, 0xBF)


def _lead(byte: int) -> tuple[int, int, int] | None:
    """The rule after a lead byte; None for a byte that cannot start a character."""
    if byte < 0x80:
        return _RULES[0]
    if 0xC2 <= byte <= 0xDF:
        return (1, *_CONTINUATION)
    if byte == 0xE0:
        return (2, 0xA0, 0xBF)
    if byte == 0xED:
        return (2, 0x80, 0x9F)
    if 0xE1 <= byte <= 0xEF:
        return (2, *_CONTINUATION)
    if byte == 0xF0:
        return (3, 0x90, 0xBF)
    if 0xF1 <= byte <= 0xF3:
        return (3, *_CONTINUATION)
    if byte == 0xF4:
        return (3, 0x80, 0x8F)
    return None


def _walk(state: int, data: bytes) -> int | None:
    """The state after ``data`` read in ``state``, or None when it breaks UTF-8."""
    need, lo, hi = _RULES[state]
    for byte in data:
        if need:
            if not lo <= byte <= hi:
                return None
            need, lo, hi = need - 1, *_CONTINUATION
            continue
        rule = _lead(byte)
        if rule is None:
            return None
        need, lo, hi = rule
    return _RULES.index((need, lo, hi) if need else _RULES[0])


class Utf8Filter:
    """Leaves only tokens that keep the text valid UTF-8 after what was sampled so far.

    llama.cpp's grammar reads a token's bytes as UTF-8 but lets a byte token that breaks a
    character through (byte-level vocabularies have one per byte); JSON text must be valid
    UTF-8 and holds no control token. Whether each token may follow each kind of unfinished
    character is worked out once per vocabulary; a step is one vectorised lookup.
    """

    def __init__(self, pieces: Sequence[bytes]) -> None:
        import numpy as np

        n = len(pieces)
        # Tokens without text (control tokens, Harmony's markers) are never allowed: the
        # grammar would read their names as string characters.
        self._allowed = np.zeros((len(_RULES), n), dtype=bool)
        for token, data in enumerate(pieces):
            if not data:
                continue
            states = range(len(_RULES)) if 0x80 <= data[0] <= 0xBF else (0,)
            for state in states:
                self._allowed[state, token] = _walk(state, data) is not None
        self._state = 0

    def reset(self) -> None:
        self._state = 0

    def apply(self, cur_p: Any) -> None:
        """Set the logit of every token that would break UTF-8 to -inf."""
        import numpy as np

        ids, logits = llama.candidates(cur_p)
        logits[~self._allowed[self._state, ids]] = -np.inf

    def accept(self, data: bytes) -> None:
        """The sampled token's bytes: what the unfinished character (if any) needs now."""
        self._state = _walk(self._state, data) or 0


def _any_candidate(cur_p: Any) -> bool:
    """Whether any token is left to sample (a finite logit)."""
    import numpy as np

    _ids, logits = llama.candidates(cur_p)
    return bool(np.isfinite(logits).any())


class ArgumentGrammar:
    """Switches a grammar on for a call's JSON arguments and off at the end of the object.

    ``schemas`` maps a recipient (``functions.shell``) to its arguments' JSON Schema; a
    recipient written without its namespace (``shell``) finds ``functions.shell`` too.
    """

    def __init__(
        self,
        schemas: Mapping[str, Mapping[str, Any]],
        vocab: Any,
        utf8: Callable[[], Utf8Filter],
    ) -> None:
        self._vocab = vocab
        self._schemas = schemas
        self._utf8_filter = utf8
        self._utf8: Utf8Filter | None = None
        self._parser = StreamParser("assistant")
        self._sampler: Any = None
        self._applied = False  # the grammar narrowed this step's candidates
        self._object: JsonObjectEnd | None = None
        #: Tokens sampled under a grammar, and calls it was switched on for.
        self.constrained_tokens = 0
        self.activations = 0

    @property
    def active(self) -> bool:
        return self._sampler is not None

    def apply(self, cur_p: Any) -> None:
        """Narrow the candidates (a ``llama_token_data_array *``) while a grammar is on."""
        if self._sampler is not None:
            assert self._utf8 is not None
            self._utf8.apply(cur_p)
            llama.sampler_apply(self._sampler, cur_p)
            self._applied = _any_candidate(cur_p)

    def accept(self, token: int, data: bytes, marker: str | None) -> None:
        """The token that was sampled: feed the grammar, the object scanner and the parser."""
        applied, self._applied = self._applied, False
        if self._sampler is not None and not applied:
            # Not chosen under the grammar (a replayed token): llama.cpp aborts the process
            # when a grammar is fed a token it does not allow, so it is lifted instead.
            self._lift()
        if self._sampler is not None:
            self.constrained_tokens += 1
            if marker is None:
                llama.sampler_accept(self._sampler, token)
                assert self._object is not None and self._utf8 is not None
                self._utf8.accept(data)
                self._object.feed(data)
                if self._object.done:
                    self._lift()
        events = self._parser.feed(marker, special=True) if marker else self._parser.feed(data)
        for event in events:
            if isinstance(event, MessageStarted):
                self._lift()
                self._maybe_start(event.header.recipient, event.header.content_type)
            elif isinstance(event, MessageEnded):
                self._lift()

    def close(self) -> None:
        self._lift()

    def _maybe_start(self, recipient: str | None, content_type: str | None) -> None:
        if not recipient or "json" not in (content_type or "").lower():
            return
        name = recipient.split()[0]
        schema = self._schemas.get(name) or self._schemas.get(f"functions.{name}")
        if schema is None or schema.get("type", "object") != "object":
            # A tool whose argument is not an object (apply_patch's is a string: the patch
            # itself, as gpt-oss was trained) takes the raw text: sampled freely.
            return
        gbnf = schema_grammar(schema)
        if gbnf is None:
            return
        sampler = llama.sampler_init_grammar(self._vocab, gbnf)
        if not sampler:
            return
        self._sampler = sampler
        self._object = JsonObjectEnd()
        self._utf8 = self._utf8_filter()
        self._utf8.reset()
        self.activations += 1

    def _lift(self) -> None:
        if self._sampler is not None:
            llama.sampler_free(self._sampler)
            self._sampler = None
            self._object = None
