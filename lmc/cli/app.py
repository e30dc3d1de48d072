"""The ``lmc`` command. Heavy modules are imported inside commands so ``--help`` stays fast."""

from __future__ import annotations

import typer

from lmc.cli.harmony_commands import harmony_app

app = typer.Typer(
    name="lmc",
    help="A local agent runtime for gpt-oss: chat with a model that runs code on your computer.",
    no_args_is_help=False,
    add_completion=True,
    pretty_exceptions_enable=False,
)
app.add_typer(harmony_app, name="harmony")


def main() -> None:
    """Console-script entry point."""
    app()
