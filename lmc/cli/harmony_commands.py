"""``lmc harmony render|parse``: debug commands that expose the Harmony layer as it is.

Outside tools and later tests rely on their exact output, so they print nothing but the
result; errors are one line on stderr with exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

harmony_app = typer.Typer(
    help="Render and parse Harmony text (debugging aids).", no_args_is_help=True
)

_SOURCE = typer.Argument(help="File to read, or - (the default) for standard input.")


def _read(source: str) -> str:
    from lmc.cli.streams import read_stdin
    from lmc.errors import InputError

    try:
        if source == "-":
            return read_stdin()
        return Path(source).read_text(encoding="utf-8")
    except InputError as exc:
        _fail(str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {source}: {exc}")


def _fail(message: str) -> NoReturn:
    typer.echo(f"lmc harmony: {message}", err=True)
    raise typer.Exit(2)


def _write(text: str) -> None:
    """Write exactly ``text`` as UTF-8, whatever the locale's encoding."""
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()


@harmony_app.command("render")
def render_command(
    source: Annotated[str, _SOURCE] = "-",
    no_drop_analysis: Annotated[
        bool, typer.Option("--no-drop-analysis", help="Keep earlier chain-of-thought.")
    ] = False,
    no_next_role: Annotated[
        bool, typer.Option("--no-next-role", help="Do not end with <|start|>assistant.")
    ] = False,
) -> None:
    """Render a conversation (openai-harmony's Conversation JSON) to Harmony text."""
    from lmc.errors import LmcError
    from lmc.harmony.conversation import Conversation
    from lmc.harmony.render import render_conversation

    text = _read(source)
    try:
        conversation = Conversation.from_json(json.loads(text))
        rendered = render_conversation(
            conversation,
            next_role=None if no_next_role else "assistant",
            auto_drop_analysis=not no_drop_analysis,
        )
    except json.JSONDecodeError as exc:
        _fail(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
    except LmcError as exc:
        _fail(str(exc))
    _write(rendered)


@harmony_app.command("parse")
def parse_command(
    source: Annotated[str, _SOURCE] = "-",
    role: Annotated[
        str,
        typer.Option(
            help="'assistant': the prompt ended in <|start|>assistant; 'none': the text "
            "starts with <|start|>."
        ),
    ] = "assistant",
    messages: Annotated[
        bool, typer.Option("--messages", help="Print Harmony messages instead of LMC chunks.")
    ] = False,
) -> None:
    """Parse a completion (special tokens as literal markers) into LMC chunks or messages."""
    from lmc.errors import LmcError
    from lmc.harmony.parser import parse_completion
    from lmc.harmony.to_lmc import completion_to_chunks

    if role not in ("assistant", "none"):
        _fail(f"unknown role {role!r} (expected assistant or none)")
    start_role = None if role == "none" else "assistant"
    text = _read(source)
    try:
        if messages:
            parsed = parse_completion(text, role=start_role)
            _write(json.dumps([m.to_json() for m in parsed], ensure_ascii=False) + "\n")
        else:
            for chunk in completion_to_chunks(text, role=start_role):
                _write(json.dumps(chunk, ensure_ascii=False) + "\n")
    except LmcError as exc:
        _fail(str(exc))
