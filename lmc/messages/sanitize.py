"""Making text the model or its code wrote safe to show on a terminal.

Everything lmc prints that came from the model or from code (answers, reasoning, code in the
confirm view, output, file names, notes, undo messages, tool results) is hostile: an escape
sequence in it could repaint the screen, set the window title or the clipboard, and a bidi
override could make the code the person approves read differently from the code that runs.
Every renderer passes such text through :func:`for_terminal`; nothing else decides.

Control characters are not deleted but drawn visibly, so the person sees that they are
there: C0 and DEL in caret notation (``^[``, ``^?``), C1 as ``<U+009B>``, and characters that
change how the rest of a line reads (bidi controls, zero-width characters) as ``<U+202E>``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "INVISIBLE",
    "controls_in",
    "for_json",
    "for_terminal",
    "invisible_in",
    "name_for_terminal",
]

#: Characters that draw nothing themselves but change how the text around them reads:
#: bidi embeddings, overrides and isolates, marks, zero-width characters, the BOM.
INVISIBLE: Final = frozenset(
    "\u061c\u00ad\u180e"
    "\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064"
    "\u2066\u2067\u2068\u2069"
    "\ufeff"
)

_INVISIBLE_CLASS: Final = "".join(sorted(INVISIBLE))
# C0 but tab and line feed, DEL, C1, the invisible characters, lone surrogates.
_UNSAFE: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f{_INVISIBLE_CLASS}\ud800-\udfff]")
_UNSAFE_KEEP_CR: Final = re.compile(
    f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f{_INVISIBLE_CLASS}\ud800-\udfff]"
)
_UNSAFE_IN_NAME: Final = re.compile(f"[\x00-\x1f\x7f\x80-\x9f{_INVISIBLE_CLASS}\ud800-\udfff]")
# What JSON leaves raw that a terminal showing it would act on: C1 and the invisible ones.
_CONTROLS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but \t \n, DEL, C1
_JSON_RAW: Final = re.compile(f"[\x80-\x9f{_INVISIBLE_CLASS}]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"<U+{code:04X}>"


def for_terminal(text: str, *, keep_cr: bool = False) -> str:
    """``text`` with every control and invisible character drawn visibly.

    Tab and line feed stay. ``keep_cr`` keeps carriage returns too, for live output
    whose progress bars rewrite their line; everywhere else a ``\\r`` could hide what
    comes before it, so it is drawn as ``^M``.
    """
    pattern = _UNSAFE_KEEP_CR if keep_cr else _UNSAFE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)


def name_for_terminal(name: str) -> str:
    """A name the code chose (a file's, a folder's) drawn on one line: line feeds and tabs
    are drawn visibly too (``^J``, ``^I``), besides everything :func:`for_terminal` draws.

    A file called ``"x\\n  deleted   app.py  -120"`` would otherwise paint a line of its
    own in "files changed" or in undo's report, one the person reads as lmc's.
    """
    return _UNSAFE_IN_NAME.sub(_visible, name)


def invisible_in(text: str) -> list[str]:
    """The distinct bidi and zero-width characters in ``text``, as ``U+XXXX`` names."""
    if text.isascii():
        return []
    found = sorted({char for char in text if char in INVISIBLE})
    return [f"U+{ord(char):04X}" for char in found]


def controls_in(text: str) -> int:
    """How many control characters (C0 but tab and line feed, DEL, C1) ``text`` holds."""
    return len(_CONTROLS.findall(text))


def for_json(serialized: str) -> str:
    """A JSON document with C1 controls, bidi and zero-width characters escaped too
    (``json.dumps`` escapes only C0).

    A terminal that shows ``--json`` output must not meet a raw CSI (U+009B) or a bidi
    override in it; the escaped document parses to the same values.
    """
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", serialized)
