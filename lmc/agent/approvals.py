"""What the person said about a call, and the rules that answer for them.

Every code block and every tool call (MCP tools, the browser) is confirmed on one path
(:meth:`lmc.agent.loop.Loop.confirm`); what the person answers there is a :data:`Answer`:
True runs, a string runs that edited text instead, False or :class:`Declined` declines, the
latter with a reason the model reads along with the refusal, so it does not simply try again.

Rules (:class:`Approvals`) approve a kind of call without asking: a language (``python``), a
tool (``fs.read_file``, ``fs.*``) or a shell command prefix (``git status``). They come from
the session (the answers ``a`` and ``r``) or from the config (``approve.allow = [...]``). A
rule only spares the question: it never widens the sandbox or turns the network on, so an
approved block runs exactly as contained as one the person said yes to.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Final, Literal

from lmc.agent.tools import FUNCTION_LANGUAGES
from lmc.harmony.to_lmc import APPLY_PATCH
from lmc.messages import Block

__all__ = [
    "LANGUAGES",
    "Answer",
    "Approvals",
    "Decision",
    "Declined",
    "Rule",
    "decision_of",
    "kind_rule",
    "parse_rule",
    "refusal_text",
    "suggested_prefix",
]

LANGUAGES: Final = ("python", *FUNCTION_LANGUAGES)

#: Shell syntax that chains, substitutes or redirects: a prefix rule never approves a line with
#: any of it, or ``git status; rm -rf ~`` would pass as ``git status``.
_SHELL_META: Final = re.compile(r"[;&|<>`$(){}\\\n]")


@dataclass(frozen=True, slots=True)
class Declined:
    """The person said no, and why (``""``: no reason given)."""

    reason: str = ""


#: What a confirmer answers about one call.
Answer = bool | str | Declined


@dataclass(frozen=True, slots=True)
class Decision:
    """An answer, normalised: run it (as ``edited`` when given), or not, and why not."""

    run: bool
    edited: str | None = None
    reason: str = ""


def decision_of(answer: object) -> Decision:
    """The :class:`Decision` for what a confirmer returned (an empty edit declines)."""
    if answer is True:
        return Decision(True)
    if isinstance(answer, str) and answer:
        return Decision(True, edited=answer)
    if isinstance(answer, Declined):
        return Decision(False, reason=answer.reason.strip())
    return Decision(False)


def refusal_text(declined: str, reason: str) -> str:
    """What the model (and the person) read when a call is declined."""
    if not reason:
        return declined
    return f"{declined} Their reason: {reason}"


Kind = Literal["language", "tool", "command"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One approval: a language, a tool (``SERVER.TOOL``, ``SERVER.*``) or a command prefix."""

    text: str
    kind: Kind
    saved: bool = False  # from the config file (kept for later sessions)

    def describe(self) -> str:
        where = "saved in the config" if self.saved else "this session"
        what = {"language": "every {} block", "tool": "the tool {}", "command": "commands `{}`"}
        return f"{what[self.kind].format(self.text)} ({where})"

    def matches(self, block: Block) -> bool:
        kind, fmt = block["type"], block["format"]
        if self.kind == "tool":
            if kind != "tool_call":
                return False
            if self.text.endswith(".*"):
                return fmt.startswith(self.text[:-1])
            return fmt == self.text
        if kind != "code":
            return False
        if self.kind == "language":
            return fmt == self.text
        return fmt == "shell" and _every_line_starts_with(block["content"], self.text)


def _words(line: str) -> list[str] | None:
    try:
        return shlex.split(line)
    except ValueError:
        return None


def _every_line_starts_with(code: str, prefix: str) -> bool:
    """Every command line of ``code`` is a plain command that begins with ``prefix``'s words."""
    want = _words(prefix) or []
    lines = [line.strip() for line in code.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not want or not lines:
        return False
    for line in lines:
        if _SHELL_META.search(line):
            return False
        words = _words(line)
        if words is None or words[: len(want)] != want:
            return False
    return True


def parse_rule(text: str, *, saved: bool = False) -> Rule:
    """A rule from its text: a language name, ``tool:NAME``, a dotted ``SERVER.TOOL`` or
    ``apply_patch``, else a shell command prefix. Raises ValueError (its message is for the
    person)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError("an approval rule cannot be empty")
    if text.lower() in LANGUAGES:
        return Rule(text.lower(), "language", saved)
    if text == APPLY_PATCH:  # gpt-oss's patch tool: a tool, though it has no dot
        return Rule(text, "tool", saved)
    if text.startswith("tool:"):
        name = text.removeprefix("tool:").strip()
        if not name:
            raise ValueError("`tool:` needs a tool name, such as tool:fs.read_file")
        return Rule(name, "tool", saved)
    if " " not in text and re.fullmatch(r"[\w-]+\.(\*|[\w-]+)", text):
        return Rule(text, "tool", saved)
    if _SHELL_META.search(text) or not _words(text):
        raise ValueError(
            f"{text!r} is not a rule: a command prefix is plain words, without ; | & > $ or quotes"
        )
    return Rule(text, "command", saved)


def kind_rule(block: Block) -> Rule:
    """The session rule for 'this kind of block' (the answer ``a``): its language, or its tool."""
    if block["type"] == "tool_call":
        return Rule(block["format"], "tool")
    return Rule(block["format"], "language")


def suggested_prefix(code: str) -> str:
    """A command prefix to offer for a shell block: the first line's first two words."""
    for line in code.splitlines():
        words = _words(line.strip())
        if words:
            return " ".join(words[:2])
    return ""


@dataclass
class Approvals:
    """The rules in force: saved ones (from the config) and this session's."""

    rules: list[Rule] = field(default_factory=list)

    @classmethod
    def from_config(cls, texts: list[str] | tuple[str, ...]) -> Approvals:
        return cls([parse_rule(text, saved=True) for text in texts])

    def add(self, rule: Rule) -> bool:
        """Add ``rule``; False when the same rule is already there."""
        if any(r.text == rule.text and r.kind == rule.kind for r in self.rules):
            return False
        self.rules.append(rule)
        return True

    def remove(self, which: str) -> Rule:
        """Remove a rule by its number (from 1, as :meth:`lines` shows) or its text."""
        index = int(which) - 1 if which.isdigit() else None
        for i, rule in enumerate(self.rules):
            if i == index or rule.text == which:
                del self.rules[i]
                return rule
        raise ValueError(f"no approval rule {which!r} (%approvals lists them)")

    def allows(self, block: Block) -> Rule | None:
        """The first rule that approves ``block``, if any."""
        return next((rule for rule in self.rules if rule.matches(block)), None)

    def lines(self) -> list[str]:
        return [f"{i}. {rule.describe()}" for i, rule in enumerate(self.rules, 1)]
