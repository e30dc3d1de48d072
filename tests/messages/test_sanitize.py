"""The one sanitizer for terminal text: nothing the model or code wrote drives the terminal."""

from __future__ import annotations

import json

from lmc.messages.sanitize import (
    controls_in,
    for_json,
    for_terminal,
    invisible_in,
    name_for_terminal,
)


def test_escape_sequences_are_drawn_not_sent() -> None:
    forged = 'print("hello")  # \x1b[1A\x1b[2K\rprint("world")'
    shown = for_terminal(forged)
    assert "\x1b" not in shown and "\r" not in shown
    assert "^[[1A^[[2K^M" in shown


def test_osc_and_c1_and_del_are_visible() -> None:
    shown = for_terminal("a\x1b]52;c;Y3VybA==\x07b\x9b2Jc\x7f")
    assert shown == "a^[]52;c;Y3VybA==^Gb<U+009B>2Jc^?"


def test_tabs_newlines_and_plain_text_stay() -> None:
    text = "def f():\n\treturn 'héllo ✓'\n"
    assert for_terminal(text) == text


def test_carriage_return_kept_only_when_asked() -> None:
    assert for_terminal("10%\r20%", keep_cr=True) == "10%\r20%"
    assert for_terminal("10%\r20%") == "10%^M20%"


def test_bidi_and_zero_width_are_flagged_and_drawn() -> None:
    text = "access = 'user\u202e \u2066// admin\u2069\u2066'\u200b"
    assert invisible_in(text) == ["U+200B", "U+202E", "U+2066", "U+2069"]
    shown = for_terminal(text)
    assert "\u202e" not in shown and "<U+202E>" in shown and "<U+200B>" in shown


def test_lone_surrogates_become_replacement_characters() -> None:
    assert for_terminal("a\udcffb") == "a\ufffdb"


def test_json_escapes_c1_too() -> None:
    dumped = json.dumps({"content": "x\x9b31mred"}, ensure_ascii=False)
    assert "\x9b" in dumped  # json.dumps alone lets C1 through
    safe = for_json(dumped)
    assert "\x9b" not in safe and json.loads(safe) == {"content": "x\x9b31mred"}


def test_json_escapes_bidi_and_zero_width_too() -> None:
    dumped = json.dumps({"content": "a\u202eb\u200bc"}, ensure_ascii=False)
    safe = for_json(dumped)
    assert "\u202e" not in safe and "\\u202e" in safe
    assert json.loads(safe) == {"content": "a\u202eb\u200bc"}


def test_controls_are_counted_but_not_tabs_or_newlines() -> None:
    assert controls_in("a\tb\nc") == 0
    assert controls_in("\x1b[2J\r\x7f\x9b") == 4


def test_a_name_is_drawn_on_one_line() -> None:
    name = "a\n  deleted   b.py\tc\x1b]2;t\x07\u202e.txt"
    assert name_for_terminal(name) == "a^J  deleted   b.py^Ic^[]2;t^G<U+202E>.txt"
    assert name_for_terminal("src/plain name.py") == "src/plain name.py"
