"""The ``lmc`` command line in typer (:mod:`lmc.cli.app` starts it; a plain ``lmc run`` is read
without it, by :mod:`lmc.cli.run_args`). Heavy modules are imported inside commands so
``--help`` stays fast.

Only typer is imported here; ``rich_markup_mode=None`` keeps typer's help on plain click
formatting, so ``lmc --help`` does not import rich either (scripts/bench_cli_startup.py).
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer
import typer.core

from lmc.cli.harmony_commands import harmony_app
from lmc.cli.mcp_commands import mcp_app
from lmc.cli.options import SharedOptions, with_options
from lmc.cli.run_args import probe_sandbox_early
from lmc.settings import BY_KEY


class _Group(typer.core.TyperGroup):
    """Lets ``--resume`` stand alone (meaning the latest conversation), as ``--resume [ID]``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        fixed: list[str] = []
        for index, arg in enumerate(args):
            fixed.append(arg)
            following = args[index + 1] if index + 1 < len(args) else None
            if arg == "--resume" and (following is None or following.startswith("-")):
                fixed.append("latest")
        result: list[str] = super().parse_args(ctx, fixed)
        return result


app = typer.Typer(
    cls=_Group,
    name="lmc",
    help="A local agent runtime for gpt-oss: chat with a model that runs code on your computer.\n\n"
    "Run `lmc` to chat, `lmc run PROMPT` for one answer.",
    no_args_is_help=False,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(harmony_app, name="harmony")
app.add_typer(mcp_app, name="mcp")

history_app = typer.Typer(
    help="List, show, export or delete stored conversations.",
    rich_markup_mode=None,
    invoke_without_command=True,
)
app.add_typer(history_app, name="history")


def _version(value: bool) -> None:
    if value:
        from lmc import __version__

        typer.echo(f"lmc {__version__}")
        raise typer.Exit()


def _shared(ctx: typer.Context, given: dict[str, Any]) -> SharedOptions:
    """Options given to ``lmc`` before the subcommand fill in those the subcommand lacks."""
    outer = ctx.obj if isinstance(ctx.obj, SharedOptions) else None
    return SharedOptions(**given).over(outer)


_CTX = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)


def _keyword(name: str, default: Any, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


_VERSION = _keyword(
    "version",
    False,
    Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ],
)


@app.callback(invoke_without_command=True)
@with_options("chat", before=[_CTX], after=[_VERSION])
def chat_command(ctx: typer.Context, version: bool = False, **given: Any) -> None:
    """Chat with the model: it writes code, you confirm, it runs here. %help lists commands."""
    options = SharedOptions(**given)
    if ctx.invoked_subcommand is not None:
        ctx.obj = options
        return
    from lmc.cli.chat import chat

    raise typer.Exit(chat(options))


_PROMPT = inspect.Parameter(
    "prompt",
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Argument(help="What to ask. '-' or absent with piped input: read standard input."),
    ],
)
_AUDIO = _keyword(
    "audio",
    None,
    Annotated[
        str | None,
        typer.Option(
            "--audio",
            metavar="FILE.wav",
            help="Ask with speech: a WAV file ('-': standard input), transcribed locally.",
            show_default=False,
        ),
    ],
)


@app.command("run")
@with_options("run", before=[_CTX, _PROMPT, _AUDIO])
def run_command(
    ctx: typer.Context, prompt: str | None = None, audio: str | None = None, **given: Any
) -> None:
    """Ask once and print the answer. Exits 0 on a final answer, non-zero otherwise."""
    probe_sandbox_early(given.get("sandbox"))
    from lmc.cli.oneshot import run_once

    raise typer.Exit(run_once(prompt, _shared(ctx, given), audio=audio))


_HOST = _keyword(
    "host",
    "127.0.0.1",
    Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Address to listen on (beyond loopback: only with LMC_SERVER_TOKEN set).",
        ),
    ],
)
_PORT = _keyword(
    "port",
    8000,
    Annotated[int, typer.Option("--port", metavar="N", help="Port (0: any free one).")],
)


@app.command("serve")
@with_options("serve", before=[_CTX, _HOST, _PORT])
def serve_command(
    ctx: typer.Context, host: str = "127.0.0.1", port: int = 8000, **given: Any
) -> None:
    """Serve the agent over a websocket (Open Interpreter's protocol) and a chat page."""
    from lmc.cli.serve import serve

    raise typer.Exit(serve(_shared(ctx, given), host, port))


@app.command("acp")
@with_options("acp", before=[_CTX])
def acp_command(ctx: typer.Context, **given: Any) -> None:
    """Serve an editor (Zed, JetBrains, Neovim, Emacs, JupyterLab) over the Agent Client
    Protocol on stdin/stdout."""
    from lmc.cli.acp import run_acp

    raise typer.Exit(run_acp(_shared(ctx, given)))


_DB = typer.Option("--db", help="Conversation database (default: in the user data dir).")


@history_app.callback()
def history_callback(ctx: typer.Context, db: Annotated[str | None, _DB] = None) -> None:
    """Without a subcommand: list the stored conversations."""
    ctx.obj = db
    if ctx.invoked_subcommand is None:
        from lmc.cli.history import list_conversations

        raise typer.Exit(list_conversations(db))


@history_app.command("list")
def history_list(ctx: typer.Context) -> None:
    """List the stored conversations, newest first."""
    from lmc.cli.history import list_conversations

    raise typer.Exit(list_conversations(ctx.obj))


@history_app.command("show")
def history_show(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="Conversation id (or a unique prefix).")],
    show_reasoning: Annotated[
        bool, typer.Option("--show-reasoning", help=BY_KEY["show_reasoning"].help)
    ] = False,
) -> None:
    """Show a stored conversation as the chat showed it."""
    from lmc.cli.history import show_conversation

    raise typer.Exit(show_conversation(ctx.obj, conversation, show_reasoning=show_reasoning))


@history_app.command("export")
def history_export(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="Conversation id (or a unique prefix).")],
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="File to write; '-' for stdout [default: lmc-ID.FORMAT]."
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="ipynb, md or json [default: from the file name, else ipynb]."
        ),
    ] = None,
) -> None:
    """Export a conversation as a notebook (.ipynb), Markdown (.md) or LMC JSON (.json)."""
    from lmc.cli.history import export

    raise typer.Exit(export(ctx.obj, conversation, output, fmt))


@history_app.command("delete")
def history_delete(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="Conversation id (or a unique prefix).")],
) -> None:
    """Delete a stored conversation."""
    from lmc.cli.history import delete

    raise typer.Exit(delete(ctx.obj, conversation))


@app.command("undo")
def undo_command(
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            metavar="ID",
            help="The conversation (id or a unique prefix) [default: the latest].",
            show_default=False,
        ),
    ] = None,
    turns: Annotated[
        int, typer.Option("--turns", metavar="N", min=1, help="How many turns to undo.")
    ] = 1,
    force: Annotated[
        bool,
        typer.Option("--force", help="Restore even over files changed by hand since."),
    ] = False,
    db: Annotated[str | None, _DB] = None,
) -> None:
    """Undo the last turn: its messages, and the files its code changed, as they were.

    Kernel state (variables, imports, processes) cannot be undone."""
    from lmc.cli.undo import undo

    raise typer.Exit(undo(db, conversation, turns, force=force))


@app.command("models")
def models_command() -> None:
    """List the GGUF models found locally and in the Hugging Face cache."""
    from lmc.cli.models import list_models

    raise typer.Exit(list_models())


@app.command("doctor")
@with_options("doctor")
def doctor_command(**given: Any) -> None:
    """Check this machine: which languages run, which model and backend would be used, GPU,
    and the sandbox."""
    from lmc.cli.doctor import doctor

    raise typer.Exit(doctor(SharedOptions(**given)))
