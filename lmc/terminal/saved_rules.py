"""Approval rules kept forever: ``[approve] allow = [...]`` in the config file.

The file is the person's: a rule is added by rewriting only the ``allow = [...]`` line of the
``[approve]`` table (or appending the table), and the result is checked to still be TOML that
holds the rule; anything else leaves the file as it was and says so.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from lmc.errors import ConfigError

__all__ = ["remove_saved_rule", "save_rule"]

_ALLOW_LINE = re.compile(r"^allow\s*=\s*\[.*\]\s*(#.*)?$")


def _table_span(lines: list[str]) -> tuple[int, int] | None:
    """The [approve] table's lines (from its header to the next table), if it has one."""
    start = next((i for i, line in enumerate(lines) if line.strip() == "[approve]"), None)
    if start is None:
        return None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    return start, end


def _rewrite(path: Path, change: list[str], drop: str | None) -> None:
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        current = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot update the config file {path}: {exc}") from exc
    allow = list(current.get("approve", {}).get("allow", []))
    allow = [rule for rule in allow if rule != drop] + [r for r in change if r not in allow]
    line = f"allow = {json.dumps(allow, ensure_ascii=False)}"
    lines = text.splitlines()
    span = _table_span(lines)
    if span is None:
        lines += ["", "[approve]", line]
    else:
        found = [i for i in range(*span) if _ALLOW_LINE.match(lines[i].strip())]
        if not found and "allow" in current.get("approve", {}):
            raise ConfigError(f"cannot update approve.allow in {path}: edit it there")
        if found:
            lines[found[0]] = line
        else:
            lines.insert(span[0] + 1, line)
    new = "\n".join(lines).lstrip("\n") + "\n"
    try:
        same = tomllib.loads(new).get("approve", {}).get("allow") == allow
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise ConfigError(f"cannot update approve.allow in {path}: edit it there")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the config file {path}: {exc.strerror}") from exc


def save_rule(path: Path, rule: str) -> str:
    """Add ``rule`` to approve.allow in ``path``; returns where, for the person."""
    _rewrite(path, [rule], None)
    return f"forever (approve.allow in {path})"


def remove_saved_rule(path: Path, rule: str) -> None:
    _rewrite(path, [], rule)
