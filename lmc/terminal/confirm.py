"""Confirm-before-execute: the ``confirm`` callable the agent calls before each block.

It answers True (run), a string (run this edited code instead), False or ``Declined(reason)``
(the agent's contract, :mod:`lmc.agent.approvals`). Before asking it draws the confirm view
(language, line count, numbered lines, head and tail of a tall block) on the terminal. The
person answers y, n (then an optional reason the model reads), e ($EDITOR), a (this kind of
block, for the rest of the session), r (a rule: a command prefix or a language, for the session
or saved in the config) or v (the whole block in a pager). An edit quit without saving runs
nothing: the question is asked again. A rule only spares the question; it
never widens the sandbox. Without a terminal to ask, the first block that needs a yes stops
the command with :class:`NoTerminalError`: nothing is declined silently.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from lmc.agent.approvals import Answer, Approvals, Declined, kind_rule, parse_rule, suggested_prefix
from lmc.errors import ConfigError, LmcError
from lmc.harmony.to_lmc import APPLY_PATCH
from lmc.messages import Block, ConfirmationChunk
from lmc.paths import host_which
from lmc.terminal.question import Terminal

__all__ = ["Asker", "Confirmer", "NoTerminalError", "edit_in_editor"]

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

NO_TERMINAL = (  # a block: code or a tool call
    "a block needs your confirmation and there is no terminal to ask: pass -y to run it "
    "without asking (it stays contained by the sandbox), or run lmc where it can ask"
)
NO_TERMINAL_TOOL = (
    "a tool call needs your confirmation and there is no terminal to ask: pass -y to call "
    "tools without asking (or auto_approve them in the server's table), or run lmc where it "
    "can ask"
)


class NoTerminalError(LmcError):
    """A block needs a yes and there is nobody to say it (no terminal, no -y)."""


def question_for(block: Block) -> str:
    """The question under the confirm view (it fits an 80-column terminal)."""
    rule = kind_rule(block)
    if rule.kind == "tool":
        return "Call this tool? [y]es [n]o [e]dit [a]lways this tool [r]ule [v]iew: "
    return f"Run this code? [y]es [n]o [e]dit [a]ll {rule.text} [r]ule [v]iew: "


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
        found = host_which(fallback)
        if found:
            return [found]
    raise ConfigError("no editor found", hint="set $EDITOR, for example EDITOR=nano")


def _run_on_terminal(command: list[str], cwd: str | Path | None) -> int:
    """Run ``command`` on the controlling terminal (standard output may be a file), in
    ``cwd``: the editor starts in its own temporary folder, never in the working directory,
    where the code could have planted an ``.exrc``, a ``.nanorc`` or a ``./vi``."""
    try:
        fd = os.open(os.ctermid(), os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return subprocess.call(command, cwd=cwd)
    try:
        return subprocess.call(command, stdin=fd, stdout=fd, stderr=fd, cwd=cwd)
    finally:
        os.close(fd)


def edit_in_editor(language: str, code: str) -> str:
    """Open ``code`` in $VISUAL/$EDITOR and return what the person saved."""
    command = _editor_command(os.environ)
    with tempfile.TemporaryDirectory(prefix="lmc-edit-") as tmp:
        suffix = _SUFFIXES.get(language, ".json" if "." in language else ".txt")
        path = Path(tmp) / f"code{suffix}"
        path.write_text(code, encoding="utf-8")
        try:
            status = _run_on_terminal([*command, str(path)], tmp)
        except OSError as exc:
            raise ConfigError(
                f"cannot start the editor {command[0]!r}: {exc}", hint="check $EDITOR"
            ) from exc
        if status != 0:
            raise ConfigError(f"the editor {command[0]!r} exited with status {status}")
        return path.read_text(encoding="utf-8")


class Confirmer:
    """Asks before each block unless ``auto_run`` or a rule (``approvals``) approves it."""

    def __init__(
        self,
        *,
        auto_run: bool,
        ask: Asker | None,
        say: Callable[[str], None],
        screen: _Screen | None = None,
        edit: Callable[[str, str], str] = edit_in_editor,
        terminal: Terminal | None = None,
        approvals: Approvals | None = None,
        save_rule: Callable[[str], str] | None = None,
    ) -> None:
        self.auto_run = auto_run
        self.terminal = terminal
        self.ask = ask if ask is not None or terminal is None else terminal.ask
        self.say = say
        self.screen = screen
        self.edit = edit
        self.approvals = approvals if approvals is not None else Approvals()
        #: Saves a rule's text in the config file and says where (raises LmcError).
        self.save_rule = save_rule

    def __call__(self, asked: Block | ConfirmationChunk) -> Answer:
        """Decide about one block: True runs it, a string runs that, False/Declined do not."""
        if self.auto_run:
            return True
        # The agent passes the block; a whole confirmation chunk is accepted too.
        block = asked["content"] if asked["type"] == "confirmation" else asked
        if self.approvals.allows(block) is not None:
            return True
        if self.ask is None:
            tool_call = block["type"] == "tool_call"  # not "code": an MCP or browser tool
            raise NoTerminalError(NO_TERMINAL_TOOL if tool_call else NO_TERMINAL)
        if self.screen is not None:
            self.screen.pause()
        language, code = block["format"], block["content"]
        self._show_view(block, language, code)
        answer = self._question(block, language, code)
        if self.screen is not None:
            if isinstance(answer, str):
                self.screen.edited(answer)
            elif answer is False or isinstance(answer, Declined):
                self.screen.waiting()
        return answer

    def _show_view(self, block: Block, language: str, code: str) -> None:
        if self.terminal is None:
            return
        from lmc.terminal.confirm_view import confirm_view

        tool = block["type"] == "tool_call"
        size = self.terminal.size()
        height, width = max(size.lines, 8), max(size.columns, 20)
        if tool and language == APPLY_PATCH:  # a patch is shown as a diff, file by file
            from lmc.terminal.patch_view import patch_view

            self.terminal.show(patch_view(code, height))
            return
        self.terminal.show(confirm_view(language, code, height, tool=tool, width=width))

    def _question(self, block: Block, language: str, code: str) -> Answer:
        assert self.ask is not None
        question = question_for(block)
        while True:
            try:
                reply = self.ask(question).strip()
            except EOFError:
                self.say("no answer: the code was not run")
                return False
            word, _, rest = reply.partition(" ")
            if word.lower() in ("v", "view"):
                if self.terminal is not None:
                    self.terminal.page(code)  # then the same question again
                continue
            answer = self._answer(word.lower(), rest.strip(), block, language, code)
            if answer is not None:
                return answer
            question = "Please answer y, n, e, a, r or v: "

    def _answer(
        self, word: str, rest: str, block: Block, language: str, code: str
    ) -> Answer | None:
        """The answer for one reply; None asks again."""
        if word in ("y", "yes"):
            return True
        if word in ("n", "no"):
            return Declined(rest or self._reason())
        if word in ("a", "all", "always"):
            rule = kind_rule(block)
            self.approvals.add(rule)
            self.say(f"approved {rule.describe()} (%approvals lists the rules)")
            return True
        if word in ("r", "rule"):
            return True if self._add_rule(block, code) else None
        if word in ("e", "edit"):
            return self._edited(language, code)
        return None

    def _reason(self) -> str:
        assert self.ask is not None
        try:
            return self.ask("Why not? (the model reads this; Enter to skip): ").strip()
        except EOFError:
            return ""

    def _add_rule(self, block: Block, code: str) -> bool:
        """Ask for a rule (prefix or language) and where to keep it; True once one was added."""
        assert self.ask is not None
        offer = suggested_prefix(code) if block["format"] == "shell" else ""
        offer = offer or kind_rule(block).text
        try:
            text = self.ask(f"Approve which command prefix or language? [{offer}] ").strip()
            text = text or offer
            rule = parse_rule(text)
            if not rule.matches(block):
                self.say(f"the rule {rule.text!r} does not cover this block; not added")
                return False
            keep = self.ask("Keep it for this [s]ession or [f]orever (saved in the config)? ")
        except ValueError as exc:
            self.say(str(exc))
            return False
        except EOFError:
            return False
        self.approvals.add(rule)
        where = "for this session"
        if keep.strip().lower().startswith("f") and self.save_rule is not None:
            try:
                where = self.save_rule(rule.text)
            except LmcError as exc:
                self.say(f"kept for this session only: {exc}")
        self.say(f"approved {rule.describe().split(' (')[0]} {where}")
        return True

    def _edited(self, language: str, code: str) -> Answer | None:
        try:
            edited = self.edit(language, code)
        except ConfigError as exc:
            self.say(f"{exc}" + (f" ({exc.hint})" if exc.hint else ""))
            return None
        if edited == code:  # quit without saving (or saved unchanged): nothing runs unasked
            self.say("the code was not changed in the editor: answer again")
            return None
        if not edited.strip():
            self.say("the edited code is empty: not run")
            return False
        return edited
