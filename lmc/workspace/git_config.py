"""Reading a git config file the model's code wrote, in Python: git itself never runs on it.

Git runs programs that its config names: ``core.fsmonitor`` at every ``git status``, a
``core.pager``, a filter's ``clean`` command, an alias ``!cmd``, ... A ``.git`` the code made
in the working directory is the person's as soon as lmc ends, and the person's own ``git`` in
that folder would run what the code put there, outside the sandbox. This module reads such a
file line by line the way git's parser does (sections, subsections, continued lines, quotes,
comments), says which lines name a program (or cannot be read, which git would refuse anyway
but lmc cannot vouch for), and writes the file again with those lines commented out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["ConfigLine", "risky_lines", "switched_off"]

#: ``section.key`` (no subsection) whose value is a program git runs, or a file git reads
#: more config from.
_PLAIN: Final = frozenset(
    {
        "core.fsmonitor", "core.hookspath", "core.sshcommand", "core.pager", "core.editor",
        "core.askpass", "core.gitproxy", "core.alternaterefscommand", "sequence.editor",
        "diff.external", "credential.helper", "gpg.program", "include.path",
        "uploadpack.packobjectshook", "interactive.difffilter", "web.browser",
        "sendemail.sendmailcmd", "sendemail.smtpserver", "protocol.allow",
    }
)  # fmt: skip
#: ``section.*.key``: the same, with any subsection.
_WITH_SUB: Final = frozenset(
    {
        "filter.*.clean", "filter.*.smudge", "filter.*.process", "diff.*.textconv",
        "diff.*.command", "merge.*.driver", "credential.*.helper", "gpg.*.program",
        "gpg.*.defaultkeycommand", "includeif.*.path", "remote.*.uploadpack",
        "remote.*.receivepack", "remote.*.vcs", "browser.*.cmd", "browser.*.path",
        "man.*.cmd", "man.*.path", "difftool.*.cmd", "difftool.*.path", "mergetool.*.cmd",
        "mergetool.*.path", "hook.*.command", "sendemail.*.sendmailcmd", "protocol.*.allow",
    }
)  # fmt: skip
#: Sections whose every key is a program (``pager.log = cmd``).
_ANY_KEY: Final = frozenset({"pager"})
_BOOLEANS: Final = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})
_HEADER: Final = re.compile(r'\[([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\]')
_KEY: Final = re.compile(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*(?==|$|[#;])")
#: What lmc puts before a line it switched off (a comment to git; remove it to switch back).
MARK: Final = "#lmc-off# "


@dataclass(frozen=True, slots=True)
class ConfigLine:
    """A setting git would act on: its name and the lines (0-based) it takes."""

    name: str  # "core.fsmonitor", "filter.x.clean", or "(a line lmc cannot read)"
    value: str
    lines: tuple[int, ...]


def _value_end(text: str) -> tuple[str, bool]:
    """The value part of ``text`` (up to a comment outside quotes), and whether it goes on
    to the next line (a backslash at its end)."""
    quoted = False
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text):
                return "".join(out), True
            out.append(text[index + 1])
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out), False


def _is_risky(section: str, sub: str | None, key: str, value: str) -> bool:
    plain = value.strip().lower()
    if sub is None and f"{section}.{key}" in _PLAIN:
        return not (section == "core" and key == "fsmonitor" and plain in _BOOLEANS)
    if sub is not None and f"{section}.*.{key}" in _WITH_SUB:
        return True
    if section in _ANY_KEY:
        return True
    if section == "alias" or (section == "submodule" and key == "update"):
        return "!" in value
    if section == "remote" and key in ("url", "pushurl"):
        return plain.startswith("ext::")
    return section == "url" and (sub or "").lower().startswith("ext::")


@dataclass(slots=True)
class _Parser:
    section: str = ""
    sub: str | None = None
    found: list[ConfigLine] | None = None

    def header(self, text: str) -> str | None:
        """Read a ``[section "sub"]`` at the start of ``text``; the rest of the line, or None
        when it is no header git reads."""
        match = _HEADER.match(text)
        if match is None:
            return None
        name, sub = match.group(1), match.group(2)
        if sub is None and "." in name:  # the old [section.sub] form: lower-cased by git
            name, sub = name.split(".", 1)
            sub = sub.lower()
        elif sub is not None:
            sub = re.sub(r"\\(.)", r"\1", sub)
        self.section, self.sub = name.lower(), sub
        return text[match.end() :].strip()


def risky_lines(text: str) -> list[ConfigLine]:
    """The settings in a config file's ``text`` that make git run a program (or read more
    config), and the lines git could not read."""
    parser = _Parser()
    found: list[ConfigLine] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        start = index
        rest = lines[index].strip()
        index += 1
        if rest.startswith("["):
            after = parser.header(rest)
            if after is None:
                found.append(ConfigLine("(a line lmc cannot read)", rest, (start,)))
                continue
            rest = after
        if not rest or rest[0] in "#;":
            continue
        match = _KEY.match(rest)
        if match is None:
            found.append(ConfigLine("(a line lmc cannot read)", rest, (start,)))
            continue
        key = match.group(1).lower()
        raw = rest[match.end() :].lstrip()
        value, more = _value_end(raw[1:] if raw.startswith("=") else "")
        while more and index < len(lines):
            piece, more = _value_end(lines[index])
            value += piece
            index += 1
        if _is_risky(parser.section, parser.sub, key, value):
            sub = f".{parser.sub}" if parser.sub is not None else ""
            name = f"{parser.section}{sub}.{key}"
            found.append(ConfigLine(name, value.strip(), tuple(range(start, index))))
    return found


def switched_off(text: str, risky: list[ConfigLine]) -> str:
    """``text`` with the lines of ``risky`` commented out (a header on the same line as a
    setting stays a header, on a line of its own)."""
    lines = text.split("\n")
    for setting in risky:
        for number in setting.lines:
            line = lines[number]
            stripped = line.strip()
            match = _HEADER.match(stripped) if stripped.startswith("[") else None
            if match is not None and number == setting.lines[0]:
                lines[number] = f"{match.group(0)}\n{MARK}{stripped[match.end() :].strip()}"
            else:
                lines[number] = MARK + line
    return "\n".join(lines)
