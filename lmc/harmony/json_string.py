"""Stream one string field out of a JSON object that arrives in pieces.

A function call's arguments come as JSON (``{"code": "print(1)\\n"}``) a few characters at
a time. To show and run code as it is written, :class:`JsonFieldStreamer` follows the object
just far enough to find the field and hands out its decoded value piece by piece. Escapes
split across pieces (``\\`` then ``n``, or ``\\u00`` then ``e9``) and surrogate pairs
(``\\ud83d\\ude00``) are joined; what cannot be decoded becomes U+FFFD or is kept as written,
never an exception. Work per piece is proportional to the piece.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from typing import Final

__all__ = ["CODE_FIELDS", "JsonFieldStreamer", "JsonStringDecoder"]

#: Argument names that hold the code of a code-running function, in order of preference.
CODE_FIELDS: Final = ("code", "command", "cmd", "script", "source")

_SIMPLE_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_SPECIAL_IN_STRING: Final = re.compile(r'["\\]')
_REPLACEMENT: Final = "\ufffd"


class JsonStringDecoder:
    """Decodes the body of a JSON string (after its opening quote) fed in pieces.

    :meth:`feed` returns the decoded text it could complete and how many characters of the
    piece belong to the string; once the closing quote is seen :attr:`done` is true and the
    rest of the piece is not the string's.
    """

    def __init__(self) -> None:
        self.done = False
        self._escape: str | None = None  # "\\" then up to "\\uXXXX" while an escape is open
        self._high: str | None = None  # a high surrogate waiting for its low half

    @property
    def idle(self) -> bool:
        """No escape or surrogate is half read (plain text would pass through unchanged)."""
        return self._escape is None and self._high is None and not self.done

    def feed(self, piece: str) -> tuple[str, int]:
        """Decode from ``piece``; return (text, characters of ``piece`` consumed)."""
        out: list[str] = []
        pos = 0
        end = len(piece)
        while pos < end and not self.done:
            if self._escape is not None:
                pos = self._escape_char(piece, pos, out)
                continue
            match = _SPECIAL_IN_STRING.search(piece, pos)
            stop = match.start() if match else end
            if stop > pos:
                self._flush_high(out)
                out.append(piece[pos:stop])
            if match is None:
                pos = end
            elif match.group() == '"':
                self._flush_high(out)
                self.done = True
                pos = stop + 1
            else:
                self._escape = "\\"
                pos = stop + 1
        return "".join(out), pos

    def finish(self) -> str:
        """The input ended (no closing quote): what is pending, as written or U+FFFD."""
        out: list[str] = []
        self._flush_high(out)
        if self._escape is not None:
            out.append(self._escape)
            self._escape = None
        return "".join(out)

    def _escape_char(self, piece: str, pos: int, out: list[str]) -> int:
        escape = self._escape
        assert escape is not None
        char = piece[pos]
        if escape == "\\":
            if char == "u":
                self._escape = "\\u"
                return pos + 1
            self._escape = None
            if char in _SIMPLE_ESCAPES:
                self._flush_high(out)
                out.append(_SIMPLE_ESCAPES[char])
                return pos + 1
            self._flush_high(out)  # an invalid escape is kept as it was written
            out.append("\\")
            return pos
        if char not in _HEX:  # a broken \u escape: keep its text, read on from here
            self._escape = None
            self._flush_high(out)
            out.append(escape)
            return pos
        escape += char
        if len(escape) < 6:
            self._escape = escape
            return pos + 1
        self._escape = None
        self._code_unit(int(escape[2:], 16), out)
        return pos + 1

    def _code_unit(self, unit: int, out: list[str]) -> None:
        if 0xD800 <= unit <= 0xDBFF:
            self._flush_high(out)
            self._high = chr(unit)
        elif 0xDC00 <= unit <= 0xDFFF:
            if self._high is not None:
                high = ord(self._high) - 0xD800
                self._high = None
                out.append(chr(0x10000 + (high << 10) + (unit - 0xDC00)))
            else:
                out.append(_REPLACEMENT)
        else:
            self._flush_high(out)
            out.append(chr(unit))

    def _flush_high(self, out: list[str]) -> None:
        if self._high is not None:
            self._high = None
            out.append(_REPLACEMENT)


class _Scan(Enum):
    BEFORE_OBJECT = "before_object"
    BEFORE_KEY = "before_key"
    KEY = "key"
    BEFORE_COLON = "before_colon"
    BEFORE_VALUE = "before_value"
    TARGET = "target"  # inside the wanted string value: decoded text goes out
    SKIP_STRING = "skip_string"
    SKIP_NESTED = "skip_nested"
    SKIP_SCALAR = "skip_scalar"
    AFTER_VALUE = "after_value"
    DONE = "done"
    FAILED = "failed"  # not an object of the expected shape


class JsonFieldStreamer:
    """Finds the first top-level field named in ``fields`` whose value is a string, and
    streams that value decoded.

    :attr:`found` says whether such a field began; :attr:`failed` that the text is not a
    JSON object (the caller may then fall back to the raw text).
    """

    def __init__(self, fields: Iterable[str] = CODE_FIELDS) -> None:
        self._fields = frozenset(fields)
        self._state = _Scan.BEFORE_OBJECT
        self._string = JsonStringDecoder()
        self._key: list[str] = []
        self._depth = 0  # nesting inside a skipped value
        self._nested_string: JsonStringDecoder | None = None
        self.found = False

    @property
    def failed(self) -> bool:
        return self._state is _Scan.FAILED

    @property
    def done(self) -> bool:
        """The wanted value is complete, or the object ended, or it failed."""
        return self._state in (_Scan.DONE, _Scan.FAILED)

    def feed(self, piece: str) -> str:
        """Feed the next piece of JSON text; return the decoded value text it completed."""
        string = self._string
        if (
            self._state is _Scan.TARGET and string.idle and '"' not in piece and "\\" not in piece
        ):  # the common case: plain code characters pass through as they are
            return piece
        out: list[str] = []
        pos = 0
        end = len(piece)
        while pos < end and self._state not in (_Scan.DONE, _Scan.FAILED):
            state = self._state
            if state is _Scan.TARGET:
                text, used = self._string.feed(piece[pos:])
                out.append(text)
                pos += used
                if self._string.done:
                    self._state = _Scan.DONE
                continue
            if state in (_Scan.KEY, _Scan.SKIP_STRING):
                text, used = self._string.feed(piece[pos:])
                pos += used
                if state is _Scan.KEY:
                    self._key.append(text)
                if self._string.done:
                    self._state = _Scan.BEFORE_COLON if state is _Scan.KEY else _Scan.AFTER_VALUE
                continue
            if state is _Scan.SKIP_NESTED:
                pos = self._skip_nested(piece, pos)
                continue
            char = piece[pos]
            pos += 1
            if char.isspace():
                continue
            self._structural(char)
        return "".join(out)

    def finish(self) -> str:
        """The text ended: what the value still held pending (an unfinished escape)."""
        if self._state is _Scan.TARGET:
            self._state = _Scan.DONE
            return self._string.finish()
        return ""

    def _structural(self, char: str) -> None:
        state = self._state
        if state is _Scan.BEFORE_OBJECT:
            self._state = _Scan.BEFORE_KEY if char == "{" else _Scan.FAILED
        elif state is _Scan.BEFORE_KEY:
            self._before_key(char)
        elif state is _Scan.BEFORE_COLON:
            self._state = _Scan.BEFORE_VALUE if char == ":" else _Scan.FAILED
        elif state is _Scan.BEFORE_VALUE:
            self._begin_value(char)
        elif state in (_Scan.SKIP_SCALAR, _Scan.AFTER_VALUE):
            self._after_value(char, strict=state is _Scan.AFTER_VALUE)

    def _before_key(self, char: str) -> None:
        if char == '"':
            self._key = []
            self._string = JsonStringDecoder()
            self._state = _Scan.KEY
        elif char == "}":
            self._state = _Scan.DONE
        elif char != ",":
            self._state = _Scan.FAILED

    def _after_value(self, char: str, *, strict: bool) -> None:
        """After a value: ``,`` or ``}``; a scalar being skipped (not ``strict``) takes any
        other character as its own."""
        if char == ",":
            self._state = _Scan.BEFORE_KEY
        elif char == "}":
            self._state = _Scan.DONE
        elif strict:
            self._state = _Scan.FAILED

    def _begin_value(self, char: str) -> None:
        if char == '"':
            self._string = JsonStringDecoder()
            if "".join(self._key) in self._fields:
                self.found = True
                self._state = _Scan.TARGET
            else:
                self._state = _Scan.SKIP_STRING
        elif char in "{[":
            self._depth = 1
            self._nested_string = None
            self._state = _Scan.SKIP_NESTED
        else:
            self._state = _Scan.SKIP_SCALAR

    def _skip_nested(self, piece: str, pos: int) -> int:
        end = len(piece)
        while pos < end:
            if self._nested_string is not None:
                _, used = self._nested_string.feed(piece[pos:])
                pos += used
                if self._nested_string.done:
                    self._nested_string = None
                continue
            char = piece[pos]
            pos += 1
            if char == '"':
                self._nested_string = JsonStringDecoder()
            elif char in "{[":
                self._depth += 1
            elif char in "}]":
                self._depth -= 1
                if self._depth == 0:
                    self._state = _Scan.AFTER_VALUE
                    return pos
        return pos
