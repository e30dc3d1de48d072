"""NO_COLOR (and TERM=dumb) means no escape code at all on the terminal lmc asks on: the
confirm view's line numbers were dim (ESC[2m) under NO_COLOR, since rich's own NO_COLOR
drops colours only."""

from __future__ import annotations

import io

import pytest

from lmc.terminal.confirm_view import confirm_view
from lmc.terminal.question import Terminal
from lmc.terminal.tty import console_options, no_style_wanted

CODE = "import os\nprint(os.getcwd())\n" + "\n".join(f"x{i} = {i}" for i in range(60))


class _Tty(io.StringIO):
    """A terminal, as far as rich can tell (so it would style its output)."""

    def isatty(self) -> bool:
        return True


def _shown(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    for name in ("NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream = _Tty()
    terminal = Terminal(stream)
    terminal.show(confirm_view("python", CODE, 24))
    terminal.show(confirm_view("fs.write_file", '{"path": "a"}', 24, tool=True))
    return stream.getvalue()


def test_the_confirm_view_is_styled_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _shown(monkeypatch, TERM="xterm-256color")
    assert "\x1b[" in shown  # the control: without NO_COLOR there is style


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"NO_COLOR": "yes"}, {"TERM": "dumb"}])
def test_no_color_means_no_escape_code_at_all(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    shown = _shown(monkeypatch, **env)
    assert "\x1b" not in shown, repr(shown[:300])
    assert "print(os.getcwd())" in shown and "2 " in shown  # line numbers are still there


def test_the_rule() -> None:
    assert no_style_wanted({"NO_COLOR": "1"}) and no_style_wanted({"TERM": "dumb"})
    assert not no_style_wanted({"NO_COLOR": ""}) and not no_style_wanted({})
    assert console_options({"NO_COLOR": "1"}) == {"color_system": None}
    assert console_options({}) == {}
