"""The options ``lmc`` (chat) and ``lmc run`` share, declared once.

Every option defaults to None so that "not given" is distinguishable and the config file and
``LMC_*`` variables can supply the value (see :mod:`lmc.config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

import typer

__all__ = ["Reasoning", "SandboxMode", "SharedOptions"]

_SESSION = "Session"
_MODEL = "Model"
_OUTPUT = "Output"
_SANDBOX = "Sandbox"


class Reasoning(StrEnum):
    low = "low"
    medium = "medium"
    high = "high"


class SandboxMode(StrEnum):
    off = "off"
    workspace = "workspace"
    read_only = "read-only"


ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="GGUF file, hf:REPO[:FILE], or a model name on --api-base.",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        metavar="URL",
        help="Use an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1).",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
ReplayOpt = Annotated[
    str | None,
    typer.Option(
        "--replay",
        metavar="FILE",
        help="Replay recorded completions (a text file, one per line) through the model: "
        "for tests and demos.",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
YesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Run code without asking.", rich_help_panel=_SESSION),
]
ReasoningOpt = Annotated[
    Reasoning | None,
    typer.Option(
        "--reasoning",
        metavar="LEVEL",
        help="Reasoning effort [default: medium].",
        rich_help_panel=_MODEL,
        show_default=False,
        case_sensitive=False,
    ),
]
ShowReasoningOpt = Annotated[
    bool,
    typer.Option(
        "--show-reasoning", help="Show the model's chain of thought.", rich_help_panel=_OUTPUT
    ),
]
ContextOpt = Annotated[
    int | None,
    typer.Option(
        "--context",
        metavar="TOKENS",
        help="Context window in tokens [default: the model's trained context, capped by "
        "what its KV cache fits in free memory].",
        rich_help_panel=_MODEL,
        show_default=False,
        min=256,
    ),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        metavar="TOKENS",
        help="Most tokens per model reply.",
        rich_help_panel=_MODEL,
        show_default=False,
        min=1,
    ),
]
TemperatureOpt = Annotated[
    float | None,
    typer.Option(
        "--temperature",
        metavar="T",
        help="Sampling temperature [default: 1.0].",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
TopPOpt = Annotated[
    float | None,
    typer.Option(
        "--top-p",
        metavar="P",
        help="Nucleus sampling: keep the likeliest tokens up to this probability [default: 1.0].",
        rich_help_panel=_MODEL,
        show_default=False,
        min=0.0,
        max=1.0,
    ),
]
SeedOpt = Annotated[
    int | None,
    typer.Option(
        "--seed", metavar="N", help="Sampling seed.", rich_help_panel=_MODEL, show_default=False
    ),
]
GpuLayersOpt = Annotated[
    int | None,
    typer.Option(
        "--gpu-layers",
        metavar="N",
        help="Layers to offload to the GPU (-1: all) [default: all when there is a GPU].",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Write the LMC chunks as JSON lines to stdout, and nothing else.",
        rich_help_panel=_OUTPUT,
    ),
]
ResumeOpt = Annotated[
    str | None,
    typer.Option(
        "--resume",
        metavar="ID",
        help="Resume a stored conversation: ID (or a prefix); alone (last, or before another "
        "option): the latest one.",
        rich_help_panel=_SESSION,
        show_default=False,
    ),
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        metavar="NAME",
        help="Use a named section of the config file.",
        rich_help_panel=_SESSION,
        show_default=False,
    ),
]
VerboseOpt = Annotated[
    bool,
    typer.Option("--verbose", help="Show tracebacks and backend logs.", rich_help_panel=_OUTPUT),
]
SttModelOpt = Annotated[
    str | None,
    typer.Option(
        "--stt-model",
        metavar="MODEL",
        help="Speech-to-text model for audio: a faster-whisper directory, hf:REPO, or a size "
        "name (tiny, base, small, ...) [default: base].",
        rich_help_panel=_MODEL,
        show_default=False,
    ),
]


# -- issue 19 (terminal helper): the step limit, named where it stops a task -------------------
MaxStepsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-steps",
        metavar="N",
        min=1,
        help="Tool calls the model may make for one message before lmc stops it [default: 20].",
        rich_help_panel=_SESSION,
        show_default=False,
    ),
]


McpOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="NAME",
        help="Use only this MCP server from the config (repeat for more).",
        rich_help_panel=_SESSION,
        show_default=False,
    ),
]
NoMcpOpt = Annotated[
    bool,
    typer.Option("--no-mcp", help="Use no MCP server this run.", rich_help_panel=_SESSION),
]
SandboxOpt = Annotated[
    SandboxMode | None,
    typer.Option(
        "--sandbox",
        metavar="MODE",
        help="Contain the code: workspace (write only in the working directory and /tmp), "
        "read-only, or off [default: workspace where a sandbox works].",
        rich_help_panel=_SANDBOX,
        show_default=False,
        case_sensitive=False,
    ),
]
NetworkOpt = Annotated[
    bool | None,
    typer.Option(
        "--network/--no-network",
        help="Let sandboxed code use the network [default: no network].",
        rich_help_panel=_SANDBOX,
        show_default=False,
    ),
]
WorkdirOpt = Annotated[
    str | None,
    typer.Option(
        "--workdir",
        metavar="DIR",
        help="Where code runs and may write [default: the current directory].",
        rich_help_panel=_SANDBOX,
        show_default=False,
    ),
]


@dataclass(frozen=True, slots=True)
class SharedOptions:
    """The shared options as given on the command line (None: not given)."""

    model: str | None = None
    api_base: str | None = None
    replay: str | None = None
    yes: bool = False
    reasoning: str | None = None
    show_reasoning: bool = False
    context: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    gpu_layers: int | None = None
    json: bool = False
    resume: str | None = None
    profile: str | None = None
    verbose: bool = False
    top_p: float | None = None
    mcp: tuple[str, ...] | None = None
    no_mcp: bool = False
    sandbox: str | None = None
    network: bool | None = None
    workdir: str | None = None
    stt_model: str | None = None
    max_steps: int | None = None  # issue 19

    def flags(self) -> dict[str, object]:
        """The settings these flags set, for :func:`lmc.config.load_settings`."""
        return {
            "model": self.model,
            "api_base": self.api_base,
            "replay": self.replay,
            "auto_run": True if self.yes else None,
            "reasoning": self.reasoning,
            "show_reasoning": True if self.show_reasoning else None,
            "context_size": self.context,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "gpu_layers": self.gpu_layers,
            "verbose": True if self.verbose else None,
            "top_p": self.top_p,
            "mcp": list(self.mcp) if self.mcp else None,
            "no_mcp": True if self.no_mcp else None,
            "sandbox": self.sandbox,
            "network": self.network,
            "workdir": self.workdir,
            "stt_model": self.stt_model,
            "max_steps": self.max_steps,  # issue 19
        }
