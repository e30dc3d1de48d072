"""The ``lmc`` command. Heavy modules are imported inside commands so ``--help`` stays fast.

Only typer is imported here; ``rich_markup_mode=None`` keeps typer's help on plain click
formatting, so ``lmc --help`` does not import rich either (scripts/bench_cli_startup.py).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import Annotated, Any

import typer
import typer.core

from lmc.cli.harmony_commands import harmony_app
from lmc.cli.mcp_commands import mcp_app
from lmc.cli.options import (
    ApiBaseOpt,
    ContextOpt,
    GpuLayersOpt,
    JsonOpt,
    MaxStepsOpt,
    MaxTokensOpt,
    McpOpt,
    ModelOpt,
    NetworkOpt,
    NoMcpOpt,
    ProfileOpt,
    ReasoningOpt,
    ReplayOpt,
    ResumeOpt,
    SandboxOpt,
    SeedOpt,
    SharedOptions,
    ShowReasoningOpt,
    SttModelOpt,
    TemperatureOpt,
    TopPOpt,
    VerboseOpt,
    WorkdirOpt,
    YesOpt,
)


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


def _shared(ctx: typer.Context, given: SharedOptions) -> SharedOptions:
    """Options given to ``lmc`` before the subcommand fill in those the subcommand lacks."""
    outer = ctx.obj if isinstance(ctx.obj, SharedOptions) else None
    if outer is None:
        return given
    merged = {
        f.name: _given_or_outer(getattr(given, f.name), getattr(outer, f.name))
        for f in dataclasses.fields(SharedOptions)
    }
    return SharedOptions(**merged)


def _given_or_outer(given: Any, outer: Any) -> Any:
    """The subcommand's value, unless it is unset (None, or a switch left off)."""
    if given is False and outer is None:  # --no-network: an explicit False
        return given
    return given or outer


@app.callback(invoke_without_command=True)
def chat_command(  # noqa: PLR0917 - typer reads the options from the signature
    ctx: typer.Context,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    replay: ReplayOpt = None,
    yes: YesOpt = False,
    reasoning: ReasoningOpt = None,
    show_reasoning: ShowReasoningOpt = False,
    context: ContextOpt = None,
    max_tokens: MaxTokensOpt = None,
    temperature: TemperatureOpt = None,
    seed: SeedOpt = None,
    gpu_layers: GpuLayersOpt = None,
    json: JsonOpt = False,
    resume: ResumeOpt = None,
    profile: ProfileOpt = None,
    verbose: VerboseOpt = False,
    top_p: TopPOpt = None,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    workdir: WorkdirOpt = None,
    stt_model: SttModelOpt = None,
    max_steps: MaxStepsOpt = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Chat with the model: it writes code, you confirm, it runs here. %help lists commands."""
    options = SharedOptions(
        model=model,
        api_base=api_base,
        replay=replay,
        yes=yes,
        reasoning=reasoning.value if reasoning else None,
        show_reasoning=show_reasoning,
        context=context,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        gpu_layers=gpu_layers,
        json=json,
        resume=resume,
        profile=profile,
        verbose=verbose,
        top_p=top_p,
        mcp=tuple(mcp) if mcp else None,
        no_mcp=no_mcp,
        sandbox=sandbox.value if sandbox else None,
        network=network,
        workdir=workdir,
        stt_model=stt_model,
        max_steps=max_steps,
    )
    if ctx.invoked_subcommand is not None:
        ctx.obj = options
        return
    from lmc.cli.chat import chat

    raise typer.Exit(chat(options))


@app.command("run")
def run_command(  # noqa: PLR0917 - typer reads the options from the signature
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Argument(help="What to ask. '-' or absent with piped input: read standard input."),
    ] = None,
    audio: Annotated[
        str | None,
        typer.Option(
            "--audio",
            metavar="FILE.wav",
            help="Ask with speech: a WAV file ('-': standard input), transcribed locally.",
            show_default=False,
        ),
    ] = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    replay: ReplayOpt = None,
    yes: YesOpt = False,
    reasoning: ReasoningOpt = None,
    show_reasoning: ShowReasoningOpt = False,
    context: ContextOpt = None,
    max_tokens: MaxTokensOpt = None,
    temperature: TemperatureOpt = None,
    seed: SeedOpt = None,
    gpu_layers: GpuLayersOpt = None,
    json: JsonOpt = False,
    resume: ResumeOpt = None,
    profile: ProfileOpt = None,
    verbose: VerboseOpt = False,
    top_p: TopPOpt = None,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    workdir: WorkdirOpt = None,
    stt_model: SttModelOpt = None,
    max_steps: MaxStepsOpt = None,
) -> None:
    """Ask once and print the answer. Exits 0 on a final answer, non-zero otherwise."""
    options = _shared(
        ctx,
        SharedOptions(
            model=model,
            api_base=api_base,
            replay=replay,
            yes=yes,
            reasoning=reasoning.value if reasoning else None,
            show_reasoning=show_reasoning,
            context=context,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            gpu_layers=gpu_layers,
            json=json,
            resume=resume,
            profile=profile,
            verbose=verbose,
            top_p=top_p,
            mcp=tuple(mcp) if mcp else None,
            no_mcp=no_mcp,
            sandbox=sandbox.value if sandbox else None,
            network=network,
            workdir=workdir,
            stt_model=stt_model,
            max_steps=max_steps,
        ),
    )
    from lmc.cli.oneshot import run_once

    raise typer.Exit(run_once(prompt, options, audio=audio))


def _serve_command(ctx: typer.Context, host: str, port: int, **given: Any) -> None:
    """Serve the agent over a websocket (Open Interpreter's protocol) and a chat page."""
    fields = {f.name for f in dataclasses.fields(SharedOptions)}
    values: dict[str, Any] = {
        name: value.value
        if isinstance(value, enum.Enum)
        else tuple(value)
        if isinstance(value, list)
        else value
        for name, value in given.items()
        if name in fields
    }
    from lmc.cli.serve import serve

    raise typer.Exit(serve(_shared(ctx, SharedOptions(**values)), host, port))


# `lmc serve` takes every model/session option of `lmc run` (options added to `run` later
# come along), except those about one prompt's output.
_serve_command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter(
            "host",
            inspect.Parameter.KEYWORD_ONLY,
            default="127.0.0.1",
            annotation=Annotated[
                str,
                typer.Option(
                    "--host",
                    metavar="ADDR",
                    help="Address to listen on (beyond loopback: only with LMC_SERVER_TOKEN set).",
                ),
            ],
        ),
        inspect.Parameter(
            "port",
            inspect.Parameter.KEYWORD_ONLY,
            default=8000,
            annotation=Annotated[
                int, typer.Option("--port", metavar="N", help="Port (0: any free one).")
            ],
        ),
        *(
            parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for name, parameter in inspect.signature(run_command, eval_str=True).parameters.items()
            if name not in ("ctx", "prompt", "audio", "json", "resume", "show_reasoning")
        ),
    ]
)
app.command("serve")(_serve_command)


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
    show_reasoning: ShowReasoningOpt = False,
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


@app.command("models")
def models_command() -> None:
    """List the GGUF models found locally and in the Hugging Face cache."""
    from lmc.cli.models import list_models

    raise typer.Exit(list_models())


@app.command("doctor")
def doctor_command(  # noqa: PLR0917 - typer reads the options from the signature
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    profile: ProfileOpt = None,
    sandbox: SandboxOpt = None,
    network: NetworkOpt = None,
    workdir: WorkdirOpt = None,
) -> None:
    """Check this machine: which languages run, which model and backend would be used, GPU,
    and the sandbox."""
    from lmc.cli.doctor import doctor

    options = SharedOptions(
        model=model,
        api_base=api_base,
        profile=profile,
        sandbox=sandbox.value if sandbox else None,
        network=network,
        workdir=workdir,
    )
    raise typer.Exit(doctor(options))


def main() -> None:
    """Console-script entry point."""
    from lmc.cli.streams import run_cli

    run_cli(app)
