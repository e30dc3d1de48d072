"""Confirm-before-execute: the ``confirm`` callable the agent calls before each code block.

It answers True (run), False (decline) or a string (run this edited code instead), which is
the agent's contract. The person answers y, n, e ($EDITOR) or a (this and every later block in
this session). Without a terminal to ask, it declines and says so once.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from lmc.errors import ConfigError
from lmc.messages import Chunk

__all__ = ["Asker", "Confirmer", "edit_in_editor"]

#: Shows a question and returns the answer line; raises EOFError when input has ended.
Asker = Callable[[str], str]

_SUFFIXES = {
    "python": ".py",
    "shell": ".sh",
    "javascript": ".js",
    "r": ".R",
    "applescript": ".applescript",
    "html": ".html",
}

QUESTION = "Run this code? [y]es / [n]o / [e]dit / [a]ll: "
TOOL_QUESTION = "Call this tool? [y]es / [n]o / [e]dit / [a]ll: "
NO_TERMINAL = (
    "code not run: confirmation is on and there is no terminal to ask "
    "(pass -y to run code without asking)"
)
NO_TERMINAL_TOOL = (
    "tool call not made: confirmation is on and there is no terminal to ask "
    "(pass -y to call tools without asking, or auto_approve them in the server's table)"
)


class _Screen(Protocol):
    """What the confirmer needs from a renderer (the rich and plain ones both qualify)."""

    def pause(self) -> None: ...

    def edited(self, code: str) -> None: ...

    def waiting(self, text: str = ...) -> None: ...


def _editor_command(env: dict[str, str] | os._Environ[str]) -> list[str]:
    for name in ("VISUAL", "EDITOR"):
        if env.get(name):
            return shlex.split(env[name])
    for fallback in ("nano", "vi"):
        if shutil.which(fallback):
            return [fallback]
    raise ConfigError("no editor found", hint="set $EDITOR, for example EDITOR=nano")


def edit_in_editor(language: str, code: str) -> str:
    """Open ``code`` in $VISUAL/$EDITOR and return what the person saved."""
    command = _editor_command(os.environ)
    with tempfile.TemporaryDirectory(prefix="lmc-edit-") as tmp:
        suffix = _SUFFIXES.get(language, ".json" if "." in language else ".txt")
        path = Path(tmp) / f"code{suffix}"
        path.write_text(code, encoding="utf-8")
        try:
            status = subprocess.call([*command, str(path)])
        except OSError as exc:
            raise ConfigError(
                f"cannot start the editor {command[0]!r}: {exc}", hint="check $EDITOR"
            ) from exc
        if status != 0:
            raise ConfigError(f"the editor {command[0]!r} exited with status {status}")
        return path.read_text(encoding="utf-8")


class Confirmer:
    """Asks before each code block unless ``auto_run``; a person's "a" turns auto_run on."""

    def __init__(
        self,
        *,
        auto_run: bool,
        ask: Asker | None,
        say: Callable[[str], None],
        screen: _Screen | None = None,
        edit: Callable[[str, str], str] = edit_in_editor,
    ) -> None:
        self.auto_run = auto_run
        self.ask = ask
        self.say = say
        self.screen = screen
        self.edit = edit
        self.declined_without_terminal = 0

    def __call__(self, chunk: Chunk) -> bool | str:
        """Decide about one code block: True runs it, False declines, a string runs that."""
        if self.auto_run:
            return True
        # The agent passes the code block; a whole confirmation chunk is accepted too.
        block: dict[str, Any] = chunk["content"] if chunk.get("type") == "confirmation" else chunk
        language = str(block.get("format") or block.get("language") or "")
        code = str(block.get("content") or block.get("code") or "")
        tool_call = block.get("type") == "tool_call"  # an MCP tool: code is JSON arguments
        if self.ask is None:
            if not self.declined_without_terminal:
                self.say(NO_TERMINAL_TOOL if tool_call else NO_TERMINAL)
            self.declined_without_terminal += 1
            return False
        if self.screen is not None:
            self.screen.pause()
        answer = self._question(language, code, TOOL_QUESTION if tool_call else QUESTION)
        if self.screen is not None:
            if isinstance(answer, str):
                self.screen.edited(answer)
            elif answer is False:
                self.screen.waiting()
        return answer

    def _question(self, language: str, code: str, question: str) -> bool | str:
        assert self.ask is not None
        while True:
            try:
                reply = self.ask(question).strip().lower()
            except EOFError:
                self.say("no answer: the code was not run")
                return False
            if reply in ("y", "yes"):
                return True
            if reply in ("n", "no"):
                return False
            if reply in ("a", "all"):
                self.auto_run = True
                self.say("running this and every later code block in this session")
                return True
            if reply in ("e", "edit"):
                try:
                    edited = self.edit(language, code)
                except ConfigError as exc:
                    self.say(f"{exc}" + (f" ({exc.hint})" if exc.hint else ""))
                    continue
                if not edited.strip():
                    self.say("the edited code is empty: not run")
                    return False
                return edited
            question = "Please answer y, n, e or a: "
