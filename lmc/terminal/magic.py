"""The chat's %commands: %reset, %undo, %diff, %checkpoints, %compact, %save, %load, %tokens,
%verbose, %auto_run, %approvals, %reasoning, %export, %sandbox, %network, %mcp, %jobs, %stop,
%help.

Each command is a small function of the chat's state; unknown commands show the help. A switch
typed alone shows its state in the words it takes (``network: off``) and changes nothing; a
change that restarts the kernels says so before it does.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmc.errors import LmcError
from lmc.terminal.confirm import Confirmer

__all__ = ["HELP", "ChatState", "is_magic", "run_magic"]

HELP = """\
%reset                 start a new conversation
%undo [N] [--force]    undo the last turn (or N): its messages and the files its code
                       changed (--force: even over files you changed by hand since)
%diff                  the full diff of the last turn that changed files
%checkpoints           the turns whose files %undo can restore
%compact               summarise the older turns now, to free the model's context
%save [path]           save the conversation as LMC JSON (default: lmc-<id>.json)
%load [path]           load a conversation saved with %save (default: the newest lmc-*.json)
%tokens                how much of the model's context the conversation uses
%verbose [on|off]      show full tracebacks for errors
%auto_run [on|off]     run code without asking (on) or ask before each block (off)
%approvals [remove N]  the rules that approve blocks without asking (a, r, approve.allow)
%reasoning [show|hide] show the model's reasoning, or one line of it while it thinks
%export [path.ipynb]   export the conversation as a notebook (.md: Markdown, .json: LMC)
%sandbox [off|workspace|read-only]  how code is contained (restarts the kernels)
%network [on|off]      network for sandboxed code (restarts the kernels)
%mcp [read|attach|prompt ...]  the MCP servers' tools, resources and prompts (%mcp help)
%jobs                  blocks still running in the background (after block_timeout)
%stop N                stop job N (an interrupt, then its kernel is freed)
A switch given alone (%network, %verbose, ...) shows its state and changes nothing.
%help                  this help
Esc-Enter: new line · Ctrl-C: stop the model or the code · Ctrl-D: quit"""


@dataclass
class ChatState:
    """What the commands act on."""

    interpreter: Any
    confirmer: Confirmer
    say: Callable[[str], None]
    verbose: bool = False
    renderer: Any = None  # the chat's renderer (%reasoning)
    #: Text to add to the next message (%mcp attach, %mcp prompt).
    attachments: list[str] = field(default_factory=list)


def is_magic(line: str) -> bool:
    return line.lstrip().startswith("%")


def _default_name(state: ChatState, suffix: str) -> Path:
    ident = getattr(state.interpreter, "conversation_id", None) or time.strftime("%Y%m%d-%H%M%S")
    return Path(f"lmc-{ident}{suffix}")


def _on_off(value: str) -> bool | None:
    lowered = value.lower()
    if lowered in ("on", "true", "yes", "1"):
        return True
    if lowered in ("off", "false", "no", "0"):
        return False
    return None


def _reset(state: ChatState, args: list[str]) -> None:
    state.interpreter.reset()
    state.say("conversation reset: the model starts fresh")


def _undo(state: ChatState, args: list[str]) -> None:
    force = "--force" in args
    counts = [a for a in args if a != "--force"]
    if len(counts) > 1 or (counts and not (counts[0].isdigit() and int(counts[0]) > 0)):
        state.say("usage: %undo [N] [--force]")
        return
    state.interpreter.undo(int(counts[0]) if counts else 1, force=force)
    report = getattr(state.interpreter, "last_undo", None)
    state.say("\n".join(report.lines()) if report is not None else "undone")


def _diff(state: ChatState, args: list[str]) -> None:
    patch = state.interpreter.diff()
    state.say(patch.rstrip("\n") if patch else "no turn of this conversation changed files")


def _checkpoints(state: ChatState, args: list[str]) -> None:
    turns = state.interpreter.checkpoints()
    if not turns:
        state.say("no checkpoints yet: they are taken before the model's code runs")
        return
    lines = ["turns whose files can be restored (%undo N goes back to before turn N):"]
    for turn in turns:
        files = f"{turn.changes} file{'s' if turn.changes != 1 else ''} changed"
        prompt = turn.prompt if len(turn.prompt) <= 60 else turn.prompt[:59] + "…"
        lines.append(f"  {turn.turns_back:>3}  {files:<18} {prompt}")
    state.say("\n".join(lines))


def _compact(state: ChatState, args: list[str]) -> None:
    state.say(state.interpreter.compact())


def _save(state: ChatState, args: list[str]) -> None:
    from lmc.terminal.export import export_conversation

    path = Path(args[0]).expanduser() if args else _default_name(state, ".json")
    export_conversation(list(state.interpreter.messages), path, "json")
    state.say(f"saved {len(state.interpreter.messages)} messages to {path}")


def _load(state: ChatState, args: list[str]) -> None:
    from lmc.messages import messages_from_json

    if args:
        path = Path(args[0]).expanduser()
    else:
        saved = sorted(Path().glob("lmc-*.json"), key=lambda p: p.stat().st_mtime)
        if not saved:
            raise LmcError("no lmc-*.json here to load", hint="give a path: %load FILE.json")
        path = saved[-1]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LmcError(f"cannot read {path}: {exc}") from exc
    messages = messages_from_json(text)
    state.interpreter.messages = messages
    state.say(f"loaded {len(messages)} messages from {path}")


def _tokens(state: ChatState, args: list[str]) -> None:
    counts = getattr(state.interpreter, "token_counts", None)
    if counts is not None:
        last, total = counts()
        if total.calls:
            state.say(f"tokens: last turn {last.describe()}; conversation {total.describe()}")
    used, size = state.interpreter.token_usage()
    share = 100 * used / size if size else 0.0
    state.say(f"context: {used} of {size} tokens used ({share:.0f}%)")
    reason = getattr(state.interpreter.backend, "context_reason", "")
    if reason:
        state.say(f"context size: {reason}")


def _state(on: bool) -> str:
    return "on" if on else "off"


def _verbose(state: ChatState, args: list[str]) -> None:
    if not args:
        state.say(f"verbose: {_state(state.verbose)}")
        return
    value = _on_off(args[0])
    if value is None:
        state.say("usage: %verbose [on|off]")
        return
    state.verbose = value
    state.say(f"verbose: {'on (errors show tracebacks)' if value else 'off'}")


def _auto_run(state: ChatState, args: list[str]) -> None:
    if not args:
        state.say(f"auto_run: {_state(state.confirmer.auto_run)}")
        return
    value = _on_off(args[0])
    if value is None:
        state.say(f"usage: %auto_run on|off (now {_state(state.confirmer.auto_run)})")
        return
    state.confirmer.auto_run = value
    state.say("code runs without asking" if value else "lmc asks before running code")


def _approvals(state: ChatState, args: list[str]) -> None:
    approvals = state.confirmer.approvals
    if args and args[0] in ("remove", "rm", "del") and len(args) == 2:
        try:
            rule = approvals.remove(args[1])
        except ValueError as exc:
            state.say(str(exc))
            return
        if rule.saved:
            from lmc.config import config_path
            from lmc.terminal.saved_rules import remove_saved_rule

            remove_saved_rule(config_path(), rule.text)
        state.say(f"removed: {rule.describe()}")
        return
    if args:
        state.say("usage: %approvals [remove N|RULE]")
        return
    lines = approvals.lines()
    state.say(
        "approval rules (they spare the question, never widen the sandbox):\n" + "\n".join(lines)
        if lines
        else "no approval rules: every block is asked about (answer a or r to add one)"
    )


def _reasoning(state: ChatState, args: list[str]) -> None:
    renderer = state.renderer
    shown = bool(getattr(renderer, "show_reasoning", False))
    if not args:
        state.say(f"reasoning: {'show' if shown else 'hide'}")
        return
    if args[0] not in ("show", "hide") or renderer is None:
        state.say("usage: %reasoning [show|hide]")
        return
    renderer.show_reasoning = args[0] == "show"
    state.say(f"reasoning: {args[0]}")


def _export(state: ChatState, args: list[str]) -> None:
    from lmc.terminal.export import export_conversation

    path = Path(args[0]).expanduser() if args else _default_name(state, ".ipynb")
    fmt = export_conversation(list(state.interpreter.messages), path)
    state.say(f"exported the conversation to {path} ({fmt})")


def _change_sandbox(state: ChatState, mode: str | None, network: bool | None) -> None:
    state.say("this change restarts the kernels: their variables and imports are lost…")
    lost = state.interpreter.set_sandbox(mode, network=network)
    policy = state.interpreter.computer.sandbox
    restarted = (
        f"; the {', '.join(lost)} kernel{'s' if len(lost) > 1 else ''} restarted, "
        "so earlier variables and imports are gone (the model is told)"
        if lost
        else ""
    )
    state.say(f"{policy.describe()}{restarted}")


def _sandbox(state: ChatState, args: list[str]) -> None:
    from lmc.computer.sandbox import MODES

    if not args:
        policy = getattr(state.interpreter.computer, "sandbox", None)
        now = policy.describe() if policy is not None else "unknown"
        state.say(f"{now}\nchange it with %sandbox {'|'.join(MODES)}")
        return
    _change_sandbox(state, args[0], None)


def _network(state: ChatState, args: list[str]) -> None:
    policy = getattr(state.interpreter.computer, "sandbox", None)
    current = bool(policy is not None and policy.network)
    if not args:
        state.say(f"network: {_state(current)}")
        return
    value = _on_off(args[0])
    if value is None:
        state.say(f"usage: %network on|off (now {_state(current)})")
        return
    _change_sandbox(state, None, value)


def _mcp(state: ChatState, args: list[str]) -> None:
    from lmc.mcp.browse import browse

    state.say(browse(getattr(state.interpreter, "tools", None), args, state.attachments))


def _job_table(state: ChatState) -> Any:
    return getattr(state.interpreter.computer, "jobs", None)


def _jobs(state: ChatState, args: list[str]) -> None:
    from lmc.computer.jobs import describe

    jobs = _job_table(state)
    listed = [] if jobs is None else jobs.list()
    if not listed:
        state.say("no jobs: blocks that run past block_timeout go on here as jobs")
        return
    state.say("\n".join(describe(job) for job in listed))


def _stop(state: ChatState, args: list[str]) -> None:
    jobs = _job_table(state)
    job = None
    if len(args) == 1 and args[0].isdigit() and jobs is not None:
        job = jobs.get(int(args[0]))
    if job is None:
        state.say("usage: %stop N, where N is a job %jobs lists")
        return
    state.say(job.stop())


def _help(state: ChatState, args: list[str]) -> None:
    state.say(HELP)


_COMMANDS: dict[str, Callable[[ChatState, list[str]], None]] = {
    "reset": _reset,
    "undo": _undo,
    "diff": _diff,
    "checkpoints": _checkpoints,
    "compact": _compact,
    "save": _save,
    "load": _load,
    "tokens": _tokens,
    "verbose": _verbose,
    "auto_run": _auto_run,
    "approvals": _approvals,
    "reasoning": _reasoning,
    "export": _export,
    "sandbox": _sandbox,
    "network": _network,
    "mcp": _mcp,
    "jobs": _jobs,
    "stop": _stop,
    "help": _help,
}


def run_magic(line: str, state: ChatState) -> None:
    """Run one %command line. LmcError from a command propagates (the chat prints it)."""
    try:
        words = shlex.split(line.strip()[1:])
    except ValueError as exc:
        state.say(f"cannot parse {line.strip()!r}: {exc}")
        return
    name = words[0].lower() if words else ""
    command = _COMMANDS.get(name)
    if command is None:
        state.say(f"unknown command %{name}\n{HELP}" if name else HELP)
        return
    command(state, words[1:])
