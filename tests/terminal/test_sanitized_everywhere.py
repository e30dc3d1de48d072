"""Issue 35's guard: no renderer lets an escape sequence, C1 control, BEL or bidi/zero-width
character the model or its code wrote reach the terminal, whatever the chunk.

Every renderer class in lmc.terminal (and the library's plain display) is found by walking the
package; a new one must be added to ``FACTORIES`` here, so it is fed the same hostile stream.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

import lmc.terminal
from lmc.agent import display
from lmc.cli.options import SharedOptions
from lmc.cli.session import make_output, report
from lmc.config import load_settings
from lmc.errors import LmcError
from lmc.messages import Chunk
from lmc.terminal.artifacts import ArtifactStore
from lmc.terminal.json_lines import JsonRenderer
from lmc.terminal.plain import PlainRenderer
from lmc.terminal.question import Terminal
from lmc.terminal.rich_renderer import RichRenderer

#: OSC 52 (the clipboard), OSC 2 (the title), a CSI moving the cursor, CSI as C1, a DCS,
#: a bidi override and a zero-width space.
HOSTILE = (
    "A\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07B\x1b]2;pwned\x1b\\C\x1b[1A\x1b[31m"
    "D\x9b2JE\x90qF\u202eG\u200bH\x07"
)
#: What must never be written raw: ESC, BEL, C1, the invisible characters.
RAW = re.compile("[\x07\x1b\x80-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
#: What rich itself writes on a terminal to redraw its live region (never SGR: no colours).
RICH_CONTROLS = re.compile(r"\x1b\[\?25[lh]|\x1b\[\d*[AK]|\x1b\[2K")


def hostile_stream(tmp: Path) -> list[Chunk]:
    """One hostile chunk of each kind, in the order a turn makes them."""
    image = tmp / f"shot{HOSTILE}.png"
    text = {"content": HOSTILE}
    stream: list[dict[str, Any]] = [
        {"role": "user", "type": "message", "start": True},
        {"role": "user", "type": "message", **text},
        {"role": "user", "type": "message", "end": True},
        {"role": "assistant", "type": "reasoning", "start": True},
        {"role": "assistant", "type": "reasoning", "content": HOSTILE + "\nmore\n"},
        {"role": "assistant", "type": "reasoning", "end": True},
        {"role": "assistant", "type": "code", "format": f"py{HOSTILE}", "start": True},
        {"role": "assistant", "type": "code", "format": f"py{HOSTILE}", **text},
        {"role": "assistant", "type": "code", "format": f"py{HOSTILE}", "end": True},
        {
            "role": "computer",
            "type": "confirmation",
            "format": "execution",
            "content": {"role": "assistant", "type": "code", "format": HOSTILE, **text},
        },
        {"role": "computer", "type": "console", "start": True},
        {"role": "computer", "type": "console", "format": "active_line", "content": "1"},
        {"role": "computer", "type": "console", "format": "output", "content": HOSTILE},
        {"role": "computer", "type": "console", "format": "progress", "content": HOSTILE},
        {"role": "computer", "type": "console", "format": "output", "content": "\n" * 40},
        {"role": "computer", "type": "console", "format": "output", "content": HOSTILE + "\n"},
        {"role": "computer", "type": "image", "format": "path", "content": str(image)},
        {
            "role": "computer",
            "type": "files",
            "format": "changes",
            "content": [{"path": HOSTILE, "change": "added", "added": 1, "removed": 0}],
        },
        {"role": "computer", "type": "console", "end": True},
        {"role": "assistant", "type": "tool_call", "format": f"srv.{HOSTILE}", "start": True},
        {"role": "assistant", "type": "tool_call", "format": f"srv.{HOSTILE}", **text},
        {"role": "assistant", "type": "tool_call", "format": f"srv.{HOSTILE}", "end": True},
        {"role": "computer", "type": "console", "format": "output", **text},  # a notice
        {"role": "computer", "type": "console", "end": True},
        {"role": "computer", "type": "message", **text},  # a note
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": f"# {HOSTILE}\n\n*{HOSTILE}*"},
        {"role": "assistant", "type": "message", "end": True},
    ]
    return cast("list[Chunk]", stream)


def _rich(out: io.StringIO, tmp: Path) -> Any:
    console = Console(file=out, width=100, force_terminal=True, color_system=None)
    return RichRenderer(console, show_reasoning=True, artifacts=ArtifactStore(tmp / "a"))


def _plain(out: io.StringIO, tmp: Path) -> Any:
    return PlainRenderer(out, show_reasoning=True, artifacts=ArtifactStore(tmp / "a"))


FACTORIES: dict[type, Callable[[io.StringIO, Path], Any]] = {
    RichRenderer: _rich,
    PlainRenderer: _plain,
    JsonRenderer: lambda out, tmp: JsonRenderer(out),
    display.PlainRenderer: lambda out, tmp: display.PlainRenderer(out, show_reasoning=True),
}


def _renderer_classes() -> set[type]:
    """Every class with ``feed`` and ``close`` in lmc.terminal and the library's display."""
    modules = [display]
    for info in pkgutil.walk_packages(lmc.terminal.__path__, "lmc.terminal."):
        modules.append(importlib.import_module(info.name))
    found = set()
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or inspect.isabstract(cls):
                continue
            if callable(getattr(cls, "feed", None)) and callable(getattr(cls, "close", None)):
                if getattr(cls, "_is_protocol", False):
                    continue
                found.add(cls)
    return found


def _leaks(written: str) -> list[str]:
    return [repr(m.group()) for m in RAW.finditer(RICH_CONTROLS.sub("", written))]


def test_every_renderer_is_fed_the_hostile_stream_here() -> None:
    found = _renderer_classes()
    missing = sorted(
        cls.__qualname__ for cls in found - set(FACTORIES) if cls.__name__ != "BlockRenderer"
    )
    assert not missing, f"new renderers: add them to FACTORIES so the guard feeds them: {missing}"


@pytest.mark.parametrize("kind", list(FACTORIES), ids=lambda cls: cls.__module__)
def test_no_renderer_passes_raw_escapes(kind: type, tmp_path: Path) -> None:
    out = io.StringIO()
    renderer = FACTORIES[kind](out, tmp_path)
    live_views: list[str] = []
    for chunk in hostile_stream(tmp_path):
        renderer.feed(chunk)
        live = getattr(renderer, "_live", None)
        if live is not None:  # the live region as rich would draw it next
            drawn = io.StringIO()
            Console(file=drawn, width=100, color_system=None).print(live.get_renderable())
            live_views.append(drawn.getvalue())
    renderer.close()
    written = out.getvalue()
    assert "A^[]52;c;" in written or "A\\u001b]52;c;" in written  # the text is there, drawn
    assert not _leaks(written), _leaks(written)
    assert not [leak for view in live_views for leak in _leaks(view)]
    if kind is JsonRenderer:  # and the JSON still parses to what the model wrote
        parsed = [json.loads(line) for line in written.splitlines()]
        assert parsed[1]["content"] == HOSTILE


def test_without_the_sanitizer_the_stream_reaches_the_terminal(tmp_path: Path) -> None:
    """The unprotected path: the same text printed as rich prints any text."""
    out = io.StringIO()
    Console(file=out, width=100, force_terminal=True, color_system=None).print(HOSTILE)
    assert "\x1b]52;c;" in out.getvalue() and "\x9b2J" in out.getvalue()


class _Tty:
    """A terminal that answers y to every question."""

    def __init__(self) -> None:
        self.written = io.StringIO()

    def write(self, text: str) -> int:
        return self.written.write(text)

    def flush(self) -> None:
        pass

    def readline(self) -> str:
        return "y\n"

    def getvalue(self) -> str:
        return self.written.getvalue()


@pytest.mark.parametrize("json_mode", [False, True])
def test_notes_and_errors_are_sanitized(
    json_mode: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    out = io.StringIO()
    output = make_output(SharedOptions(json=json_mode), load_settings(), out)
    output.say(f"removed {HOSTILE}")
    report(LmcError(f"cannot read {HOSTILE}", hint=HOSTILE), verbose=False, err=out)
    terminal_stream = _Tty()
    terminal = Terminal(cast("Any", terminal_stream))
    terminal.say(f"undone: {HOSTILE}")
    assert terminal.ask(f"Approve which command prefix? [{HOSTILE}] ") == "y"
    written = out.getvalue() + capsys.readouterr().err + terminal_stream.getvalue()
    assert written.count("A^[]52;c;") == 5
    assert not _leaks(written)


@pytest.mark.parametrize("module", ["lmc.cli.oneshot", "lmc.cli.serve"])
def test_the_commands_own_error_lines_are_sanitized(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lmc run`` and ``lmc serve`` write their own lines straight to stderr; a server's or
    the model's words inside one (an error body, a reason) must not drive the terminal."""
    import importlib

    loaded = importlib.import_module(module)
    write = getattr(loaded, "_stderr", None) or loaded._err
    write("no final answer: \x1b]52;c;Y3VybCB4IHwgc2g=\x07\x9b2J")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert err.startswith("lmc: no final answer: ^[]52;c;")
