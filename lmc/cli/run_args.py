"""``lmc run``'s arguments read without typer, when they are plain.

Importing typer and building the whole command line (every command's options from the
table) costs 30-45 ms of an answer-only ``lmc run``, more than Python's own start. The
arguments of almost every run are plain: known options spelled out (``--opt value``,
``--opt=value``, a short flag alone), valid values, one prompt. Those are read here, from
the same option table (:mod:`lmc.settings`) typer's options are built from, into the same
values typer gives; anything else (help, a typo, a value out of range, options before
``run``, ``--``, combined short flags, ``--resume``, shell completion) gets ``None`` and goes
to typer, which answers it as it always has (tests/cli/test_run_args.py checks the two
agree).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Final

from lmc.settings import OPTIONS, Option

__all__ = ["RunArgs", "probe_sandbox_early", "read_run_args"]

_INT: Final = re.compile(r"[+-]?[0-9]+")
_FLOAT: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Options ``lmc run`` has besides the table's.
_AUDIO: Final = "--audio"


@dataclass(frozen=True, slots=True)
class RunArgs:
    """What typer would hand ``run_command``: the prompt, ``--audio`` and the options given."""

    prompt: str | None
    audio: str | None
    given: dict[str, Any]


def _run_options() -> dict[str, tuple[Option, bool]]:
    """Each flag of ``lmc run`` -> (its option, the value a switch flag sets)."""
    flags: dict[str, tuple[Option, bool]] = {}
    for spec in OPTIONS:
        if "run" in spec.commands:
            for flag in spec.flags:
                flags[flag] = (spec, True)
            if spec.off_flag is not None:
                flags[spec.off_flag] = (spec, False)
    return flags


def _number(spec: Option, text: str) -> int | float | None:
    """The value typer gives for a plain number within the option's range, else None."""
    pattern, kind = (_INT, int) if spec.kind == "int" else (_FLOAT, float)
    if not pattern.fullmatch(text):
        return None
    value = kind(text)
    if spec.minimum is not None and value < spec.minimum:
        return None
    if spec.maximum is not None and value > spec.maximum:
        return None
    return value


def _value(spec: Option, text: str) -> Any:
    """The option's value from ``text`` as typer converts it; None when typer should say."""
    if spec.kind in ("int", "float"):
        return _number(spec, text)
    if text.startswith("-"):
        return None  # typer takes it as the value; a mistake more likely: let typer decide
    if spec.kind == "choice":
        chosen = [c for c in spec.choices if c.casefold() == text.casefold()]
        return chosen[0] if chosen else None
    if spec.kind in ("text", "path", "names"):
        return text
    return None  # a kind ``lmc run`` has no flag of


def _read_option(
    args: list[str], index: int, flags: dict[str, tuple[Option, bool]], given: dict[str, Any]
) -> int | None:
    """Read the option at ``args[index]`` into ``given``; the next index, or None."""
    arg = args[index]
    name, equals, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
    if name not in flags:
        return None
    spec, switch = flags[name]
    if spec.key in given and spec.kind != "names":
        return None  # given twice: typer's rule (the last wins) is for typer to apply
    if spec.kind == "bool":
        if equals:
            return None
        given[spec.key] = switch
        return index + 1
    if not equals:
        if index + 1 >= len(args):
            return None
        inline, index = args[index + 1], index + 1
    value = _value(spec, inline)
    if value is None:
        return None
    if spec.kind == "names":
        given[spec.key] = (*given.get(spec.key, ()), value)
    else:
        given[spec.key] = value
    return index + 1


def read_run_args(argv: list[str]) -> RunArgs | None:
    """``argv`` (without the program) read as typer reads ``lmc run ...``, or None when it is
    not plain (typer then reads it)."""
    if not argv or argv[0] != "run" or os.environ.get("_LMC_COMPLETE"):
        return None
    flags = _run_options()
    given: dict[str, Any] = {}
    prompt: str | None = None
    audio: str | None = None
    args, index = argv[1:], 0
    while index < len(args):
        arg = args[index]
        if arg == _AUDIO or arg.startswith(_AUDIO + "="):
            if audio is not None:
                return None
            if arg == _AUDIO:
                if index + 1 >= len(args) or args[index + 1].startswith("-"):
                    return None
                index += 1
                audio = args[index]
            else:
                audio = arg.partition("=")[2]
            index += 1
        elif arg.startswith("-") and arg != "-":
            if arg == "--resume" or arg.startswith("--resume="):
                return None  # lmc's own "--resume [ID]" rule (lmc.cli.commands._Group)
            next_index = _read_option(args, index, flags, given)
            if next_index is None:
                return None
            index = next_index
        else:
            if prompt is not None:
                return None
            prompt = arg
            index += 1
    return RunArgs(prompt, audio, given)


def probe_sandbox_early(mode: object) -> None:
    """Try the sandbox tool (a bwrap started and waited for: 15-35 ms) in a thread while the
    rest of ``lmc run`` loads; the answer is kept for the process (``find_tool``), so the
    sandbox's set-up later finds it ready. Its module is imported here first: two threads
    importing one package at once could wait on each other."""
    if mode == "off":
        return
    import threading

    from lmc.computer.sandbox.detect import find_tool

    threading.Thread(target=find_tool, name="lmc-sandbox-probe", daemon=True).start()
