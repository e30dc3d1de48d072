"""Every option of lmc, declared once; the CLI, the config file, ``LMC_*`` and the API use it.

A setting is a field of :class:`Settings` declared with :func:`option`; its name is the config
key, the ``LMC_NAME`` variable (unless ``env=`` says otherwise), the keyword of
:class:`lmc.Interpreter` and the Python name of the CLI parameter. From the table:

- :mod:`lmc.cli.options` builds the typer options of each command listed in ``commands``;
- :mod:`lmc.config` reads the file (top level, profiles, ``[section]`` tables) and ``LMC_*``;
- :class:`lmc.Interpreter` takes a :class:`Settings` or the same names as keywords.

Every value from every source goes through :func:`convert`, so a typo is one clear line, and
an explicit ``0``, ``0.0`` or ``false`` is a value like any other (only ``None`` means "not
given").

Adding an option is one change, here: add a field to :class:`Settings`::

    #: What it is for (this comment is for the next developer; ``help`` is for the person).
    retries: int = option(3, kind="int", minimum=0, help="How often to retry.",
                          flags=("--retries",), metavar="N", commands=RUNS)

then read ``settings.retries`` where it is used. ``flags=()`` keeps it out of the CLI
(config and ``LMC_RETRIES`` only); ``section=("net", "retries")`` also accepts it as
``[net] retries = 3`` in the file. An option that is about one command line and not a setting
(``--json``) goes in :data:`COMMAND_OPTIONS` instead. ``tests/test_settings_table.py`` walks
every option through flag, environment and file; nothing else needs to change.

Kept light on purpose (stdlib and :mod:`lmc.errors` only): ``lmc --help`` imports it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lmc.errors import ConfigError

__all__ = [
    "API_STYLES",
    "COMMAND_OPTIONS",
    "OPTIONS",
    "REASONING_LEVELS",
    "RUNS",
    "SANDBOX_MODES",
    "SETTINGS",
    "SETTING_KEYS",
    "Option",
    "Settings",
    "convert",
    "option",
    "parse_size",
    "settings_with",
]

Kind = Literal["text", "path", "int", "float", "bool", "choice", "paths", "names", "size", "table"]

REASONING_LEVELS: Final = ("low", "medium", "high")
SANDBOX_MODES: Final = ("off", "workspace", "read-only")
#: The dialects a server is spoken to in (lmc.backends.detect).
API_STYLES: Final = ("auto", "completions", "chat", "responses", "ollama")

#: The commands that talk to a model: ``lmc`` (chat), ``lmc run``, ``lmc serve``, ``lmc acp``.
RUNS: Final = frozenset({"chat", "run", "serve", "acp"})
#: Those about one conversation at the terminal.
TURNS: Final = frozenset({"chat", "run"})
#: ``lmc doctor`` checks the model and the sandbox too.
RUNS_AND_DOCTOR: Final = RUNS | {"doctor"}

MODEL, SESSION, OUTPUT, SANDBOX = "Model", "Session", "Output", "Sandbox"
GATEWAY = "Remote kernels"

_META: Final = "lmc.option"


@dataclass(frozen=True, slots=True)
class Option:
    """One option: how it is spelled everywhere, its type, default and help."""

    key: str
    kind: Kind
    default: Any
    help: str
    flags: tuple[str, ...] = ()
    #: The flag that sets a switch to false (``--no-network``).
    off_flag: str | None = None
    metavar: str | None = None
    panel: str = MODEL
    commands: frozenset[str] = RUNS
    env: str | None = None
    #: Also accepted as ``[section] name = ...`` in the file.
    section: tuple[str, str] | None = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: None is a valid value (``LMC_NAME=none`` resets it); by default when the default is.
    nullable: bool = False
    #: False: a command-line option only (no file key, no variable unless ``env`` is given).
    setting: bool = True

    @property
    def variable(self) -> str | None:
        """The environment variable that sets it (None: none)."""
        if self.env is not None:
            return self.env
        return f"LMC_{self.key.upper()}" if self.setting else None


def option(
    default: Any,
    *,
    kind: Kind,
    help: str,
    flags: tuple[str, ...] = (),
    off_flag: str | None = None,
    metavar: str | None = None,
    panel: str = MODEL,
    commands: frozenset[str] = RUNS,
    env: str | None = None,
    section: tuple[str, str] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] = (),
    aliases: Mapping[str, str] | None = None,
) -> Any:
    """A :class:`Settings` field carrying its :class:`Option` (the key is the field's name)."""
    spec = Option(
        key="",
        kind=kind,
        default=default,
        help=help,
        flags=flags,
        off_flag=off_flag,
        metavar=metavar,
        panel=panel,
        commands=commands if flags else frozenset(),
        env=env,
        section=section,
        minimum=minimum,
        maximum=maximum,
        choices=choices,
        aliases=dict(aliases or {}),
        nullable=default is None,
    )
    if isinstance(default, dict):  # a fresh table each time: tables are mutable
        table = dict(default)
        return field(default_factory=lambda: dict(table), metadata={_META: spec})
    if isinstance(default, tuple | list):
        frozen = tuple(default)
        return field(default_factory=lambda: frozen, metadata={_META: spec})
    return field(default=default, metadata={_META: spec})


@dataclass(slots=True)
class Settings:
    """Everything lmc is configured with; the defaults are a working setup."""

    model: str | None = option(
        None,
        kind="text",
        flags=("--model", "-m"),
        metavar="MODEL",
        help="GGUF file, hf:REPO[:FILE], or a model name on --api-base.",
        commands=RUNS_AND_DOCTOR,
    )
    api_base: str | None = option(
        None,
        kind="text",
        flags=("--api-base",),
        metavar="URL",
        help="Use an OpenAI-compatible server (e.g. http://127.0.0.1:8080/v1).",
        commands=RUNS_AND_DOCTOR,
    )
    #: How to talk to api_base (lmc.backends.detect): auto finds the dialect that keeps most.
    api_style: str = option(
        "auto",
        kind="choice",
        choices=API_STYLES,
        flags=("--api-style",),
        metavar="STYLE",
        help="How to talk to --api-base: auto, completions (raw Harmony), chat (Chat "
        "Completions), responses (Responses API), ollama (Ollama's /api/chat) [default: auto].",
        commands=RUNS_AND_DOCTOR,
    )
    #: The variable holding the server's API key, read after LMC_API_KEY; the key itself is
    #: never a setting (never stored in the file).
    api_key_env: str = option(
        "OPENAI_API_KEY",
        kind="text",
        help="The environment variable with the server's API key, read after LMC_API_KEY.",
    )
    replay: str | None = option(
        None,
        kind="path",
        flags=("--replay",),
        metavar="FILE",
        help="Replay recorded completions (a text file, one per line) through the model: "
        "for tests and demos.",
    )
    #: Run code without asking (the terminal's Confirmer holds it; see lmc.cli.session).
    auto_run: bool = option(
        False,
        kind="bool",
        flags=("--yes", "-y"),
        help="Run code without asking.",
        panel=SESSION,
    )
    reasoning: str = option(
        "medium",
        kind="choice",
        choices=REASONING_LEVELS,
        flags=("--reasoning",),
        metavar="LEVEL",
        help="Reasoning effort [default: medium].",
    )
    show_reasoning: bool = option(
        False,
        kind="bool",
        flags=("--show-reasoning",),
        help="Show the model's chain of thought.",
        panel=OUTPUT,
        commands=TURNS,
    )
    #: None: fitted to the model and the machine.
    context_size: int | None = option(
        None,
        kind="int",
        minimum=256,
        flags=("--context",),
        metavar="TOKENS",
        help="Context window in tokens [default: the model's trained context, capped by "
        "what its KV cache fits in free memory].",
    )
    max_tokens: int | None = option(
        None,
        kind="int",
        minimum=1,
        flags=("--max-tokens",),
        metavar="TOKENS",
        help="Most tokens per model reply.",
    )
    temperature: float = option(
        1.0,
        kind="float",
        minimum=0.0,
        maximum=2.0,
        flags=("--temperature",),
        metavar="T",
        help="Sampling temperature [default: 1.0].",
    )
    top_p: float = option(
        1.0,
        kind="float",
        minimum=0.0,
        maximum=1.0,
        flags=("--top-p",),
        metavar="P",
        help="Nucleus sampling: keep the likeliest tokens up to this probability [default: 1.0].",
    )
    seed: int | None = option(
        None, kind="int", minimum=0, flags=("--seed",), metavar="N", help="Sampling seed."
    )
    gpu_layers: int | None = option(
        None,
        kind="int",
        minimum=-1,
        flags=("--gpu-layers",),
        metavar="N",
        help="Layers to offload to the GPU (-1: all) [default: all when there is a GPU].",
    )
    max_steps: int = option(
        20,
        kind="int",
        minimum=1,
        flags=("--max-steps",),
        metavar="N",
        panel=SESSION,
        help="Tool calls the model may make for one message before lmc stops it.",
    )
    #: Seconds a code block runs before it is handed back to the model as a background job
    #: (lmc.computer.jobs); 0: never (the block runs until it ends).
    block_timeout: float = option(
        30.0,
        kind="float",
        minimum=0.0,
        flags=("--block-timeout",),
        metavar="SECONDS",
        panel=SESSION,
        commands=RUNS | {"mcp serve"},
        help="Seconds a code block runs before it goes on as a background job the model can "
        "poll, write to or stop (0: never) [default: 30].",
    )
    output_limit: int = option(
        6_000,
        kind="int",
        minimum=100,
        help="Characters of one block's output that go back to the model.",
    )
    instructions: str | None = option(
        None, kind="text", help="Extra instructions for the model (its developer message)."
    )
    db_path: str | None = option(
        None, kind="path", help="The conversation database [default: in the user data dir]."
    )
    verbose: bool = option(
        False,
        kind="bool",
        flags=("--verbose",),
        help="Show tracebacks and backend logs.",
        panel=OUTPUT,
        commands=RUNS | {"mcp serve"},
    )
    #: None: workspace where a sandbox works, else off.
    sandbox: str | None = option(
        None,
        kind="choice",
        choices=SANDBOX_MODES,
        aliases={"readonly": "read-only", "read_only": "read-only"},
        section=("sandbox", "mode"),
        flags=("--sandbox",),
        metavar="MODE",
        help="Contain the code: workspace (write only in the working directory and /tmp), "
        "read-only, or off [default: workspace where a sandbox works].",
        panel=SANDBOX,
        commands=RUNS_AND_DOCTOR,
    )
    network: bool = option(
        False,
        kind="bool",
        section=("sandbox", "network"),
        flags=("--network",),
        off_flag="--no-network",
        help="Let sandboxed code use the network [default: no network].",
        panel=SANDBOX,
        commands=RUNS_AND_DOCTOR,
    )
    sandbox_hide: tuple[str, ...] = option(
        (),
        kind="paths",
        section=("sandbox", "hide"),
        help="More paths the sandbox hides (besides ~/.ssh, ~/.aws, ...).",
    )
    #: Environment variables passed into the sandbox besides its allow-list (names or globs;
    #: a credential-looking name only when listed exactly).
    sandbox_env: tuple[str, ...] = option(
        (),
        kind="names",
        section=("sandbox", "env"),
        help="Environment variables the sandboxed code may see besides PATH, HOME, LANG, ...",
    )
    #: Protected paths in the workdir (.git, .venv, ...) left writable on purpose.
    sandbox_writable: tuple[str, ...] = option(
        (),
        kind="paths",
        section=("sandbox", "writable"),
        help="Protected entries of the working directory (.git, .venv, ...) to leave writable.",
    )
    #: None: the defaults of lmc.computer.sandbox.limits (256 processes, memory of 4 GiB or
    #: half the RAM, 1 GiB /tmp and /dev/shm).
    sandbox_processes: int | None = option(
        None,
        kind="int",
        minimum=16,
        section=("sandbox", "processes"),
        help="Most processes sandboxed code may run [default: 256].",
    )
    sandbox_memory: int | None = option(
        None,
        kind="size",
        section=("sandbox", "memory"),
        help="Most memory sandboxed code may use [default: 4 GiB or half the RAM].",
    )
    sandbox_tmp_size: int | None = option(
        None,
        kind="size",
        section=("sandbox", "tmp_size"),
        help="Size of the sandbox's private /tmp [default: 1 GiB].",
    )
    sandbox_shm_size: int | None = option(
        None,
        kind="size",
        section=("sandbox", "shm_size"),
        help="Size of the sandbox's private /dev/shm [default: 1 GiB].",
    )
    workdir: str | None = option(
        None,
        kind="path",
        flags=("--workdir",),
        metavar="DIR",
        help="Where code runs and may write [default: the current directory].",
        panel=SANDBOX,
        commands=RUNS_AND_DOCTOR,
    )
    #: The faster-whisper model that hears audio messages (None: faster-whisper "base").
    stt_model: str | None = option(
        None,
        kind="text",
        flags=("--stt-model",),
        metavar="MODEL",
        help="Speech-to-text model for audio: a faster-whisper directory, hf:REPO, or a size "
        "name (tiny, base, small, ...) [default: base].",
    )
    #: gpt-oss's browser tool (lmc.browser): which search backend, None for none.
    browser: str | None = option(
        None,
        kind="choice",
        choices=("searxng", "exa", "local"),
        section=("browser", "backend"),
        flags=("--browser",),
        metavar="BACKEND",
        help="Give the model its browser tool (search, open, find) through searxng, exa or "
        "local [default: no browser].",
        commands=RUNS_AND_DOCTOR,
    )
    browser_url: str | None = option(
        None,
        kind="text",
        section=("browser", "url"),
        flags=("--browser-url",),
        metavar="URL",
        help="The SearXNG instance (http://HOST:PORT), Exa's API address, or the folder "
        "that --browser local searches.",
        commands=RUNS_AND_DOCTOR,
    )
    #: Pages on private, loopback and link-local addresses: refused unless this is true.
    browser_allow_private: bool = option(
        False,
        kind="bool",
        section=("browser", "allow_private"),
        help="Let the browser open pages on private and loopback addresses.",
    )
    #: Approval rules kept in the config (lmc.agent.approvals): a language, a tool or a
    #: command prefix whose blocks run without asking (never with more sandbox rights).
    approve_allow: tuple[str, ...] = option(
        (),
        kind="paths",  # a list; from a variable split on ":" only, so "git status" stays whole
        section=("approve", "allow"),
        help="Rules that approve blocks without asking: a language (python), a tool "
        "(SERVER.TOOL) or a command prefix (git status).",
    )
    #: The interpreter whose environment runs the python kernel (None: lmc's own).
    python: str | None = option(
        None,
        kind="path",
        flags=("--python",),
        metavar="PATH",
        help="Run the python kernel with this interpreter (a venv's or conda env's python "
        "with ipykernel), so your own packages are there [default: lmc's].",
        panel=SESSION,
        commands=RUNS_AND_DOCTOR,
    )
    #: Snapshots of the working directory around each block (lmc.workspace, issue 21).
    checkpoints: bool = option(
        True,
        kind="bool",
        flags=("--checkpoints",),
        off_flag="--no-checkpoints",
        help="Snapshot the working directory before each block, so that %undo and lmc undo "
        "restore the files [default: on].",
        panel=SESSION,
    )
    checkpoint_max_file_size: int = option(
        10 * 1024 * 1024,
        kind="int",
        minimum=1,
        help="Files larger than this (bytes) are left out of checkpoints.",
    )
    checkpoint_max_files: int = option(
        50_000,
        kind="int",
        minimum=1,
        help="Files a checkpoint takes at most: beyond, the folders holding most are left out.",
    )
    #: gpt-oss's apply_patch tool (issue 30), declared when the working directory is writable.
    apply_patch: bool = option(
        True,
        kind="bool",
        flags=("--apply-patch",),
        off_flag="--no-apply-patch",
        help="Offer the model the apply_patch tool it was trained with: it edits files with "
        "patches you confirm as diffs (not with --sandbox read-only) [default: on].",
        panel=SESSION,
    )
    #: The kernels' state kept across kernels and sessions (lmc.computer.state, issue 31).
    kernel_state: bool = option(
        True,
        kind="bool",
        flags=("--kernel-state",),
        off_flag="--no-kernel-state",
        help="Keep the python kernel's variables and the shell's directory and exports after "
        "each block, and bring them back on --resume or when a kernel restarts [default: on].",
        panel=SESSION,
    )
    kernel_state_max_value: int = option(
        64 * 1024 * 1024,
        kind="int",
        minimum=0,
        help="A python value larger than this (bytes, pickled) is not kept across kernels.",
    )
    kernel_state_max_total: int = option(
        256 * 1024 * 1024,
        kind="int",
        minimum=0,
        help="Bytes of python values kept across kernels, in all.",
    )
    agents_md_max_bytes: int = option(
        32 * 1024,
        kind="int",
        minimum=0,
        help="Bytes of AGENTS.md text given to the model (0: AGENTS.md is not read).",
    )
    #: Near the context size the model summarises older turns (off: they are left out).
    compaction: bool = option(
        True,
        kind="bool",
        help="Summarise older turns when the conversation nears the context size "
        "(off: the oldest turns are left out instead).",
    )
    #: More host names ``lmc serve`` answers to, beyond loopback names, IP addresses and the
    #: ``--host`` name (the DNS-rebinding guard, lmc.server.security): a proxy's, say.
    server_allowed_hosts: str | None = option(
        None,
        kind="text",
        section=("server", "allowed_hosts"),
        help="More host names lmc serve answers to (comma-separated; *.example.org allows "
        "its subdomains).",
    )
    # -- kernels on a Jupyter Kernel/Enterprise Gateway (lmc.computer.gateway) --
    kernel_gateway: str | None = option(
        None,
        kind="text",
        section=("kernel_gateway", "url"),
        flags=("--kernel-gateway",),
        metavar="URL",
        help="Run the code on a Jupyter Kernel Gateway or Enterprise Gateway "
        "(e.g. http://gpu-box:8888) instead of here.",
        panel=GATEWAY,
        commands=RUNS_AND_DOCTOR,
    )
    #: Sent as ``Authorization: token ...``; better from LMC_KERNEL_GATEWAY_TOKEN than a flag.
    kernel_gateway_token: str | None = option(
        None,
        kind="text",
        section=("kernel_gateway", "token"),
        flags=("--kernel-gateway-token",),
        metavar="TOKEN",
        help="The gateway's token (better: LMC_KERNEL_GATEWAY_TOKEN).",
        panel=GATEWAY,
        commands=RUNS_AND_DOCTOR,
    )
    #: Language -> the gateway's kernelspec name, over the default {python = "python3"}.
    kernel_gateway_kernels: Mapping[str, str] = option(
        {},
        kind="table",
        section=("kernel_gateway", "kernels"),
        help="Which of the gateway's kernelspecs runs each language (python = python3).",
    )
    #: Sent with every kernel start (gateways pass on KERNEL_* and what their operator allows).
    kernel_gateway_env: Mapping[str, str] = option(
        {},
        kind="table",
        section=("kernel_gateway", "env"),
        help="Environment sent with each kernel start on the gateway.",
    )
    #: KERNEL_USERNAME (None: the login name); Enterprise Gateway starts kernels as this user.
    kernel_gateway_username: str | None = option(
        None,
        kind="text",
        section=("kernel_gateway", "username"),
        help="Who the gateway's kernels run for (KERNEL_USERNAME) [default: your login name].",
    )
    #: MCP servers by name (:class:`lmc.mcp.config.McpServerConfig` or config tables), after
    #: ``--mcp``/``--no-mcp``: read from ``[mcp.servers.NAME]`` tables, not a plain option.
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    #: Where the values came from, for ``lmc doctor`` (key -> "default", "file", ...).
    sources: dict[str, str] = field(default_factory=dict, compare=False)


def _table() -> tuple[Option, ...]:
    return tuple(
        dataclasses.replace(f.metadata[_META], key=f.name)
        for f in dataclasses.fields(Settings)
        if _META in f.metadata
    )


#: The settings, in declaration order.
SETTINGS: Final[tuple[Option, ...]] = _table()

#: Options of a command line that are not settings (no file key).
COMMAND_OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        "json",
        "bool",
        None,
        "Write the LMC chunks as JSON lines to stdout, and nothing else.",
        flags=("--json",),
        panel=OUTPUT,
        commands=TURNS,
        setting=False,
    ),
    Option(
        "resume",
        "text",
        None,
        "Resume a stored conversation: ID (or a prefix); alone (last, or before another "
        "option): the latest one.",
        flags=("--resume",),
        metavar="ID",
        panel=SESSION,
        commands=TURNS,
        setting=False,
        nullable=True,
    ),
    Option(
        "profile",
        "text",
        None,
        "Use a named section of the config file.",
        flags=("--profile", "-p"),
        metavar="NAME",
        panel=SESSION,
        commands=RUNS_AND_DOCTOR | {"mcp list", "mcp serve"},
        env="LMC_PROFILE",
        setting=False,
        nullable=True,
    ),
    Option(
        "mcp",
        "names",
        None,
        "Use only this MCP server from the config (repeat for more).",
        flags=("--mcp",),
        metavar="NAME",
        panel=SESSION,
        commands=RUNS | {"mcp list"},
        setting=False,
        nullable=True,
    ),
    Option(
        "no_mcp",
        "bool",
        None,
        "Use no MCP server this run.",
        flags=("--no-mcp",),
        panel=SESSION,
        setting=False,
    ),
)

#: Every option, settings first.
OPTIONS: Final[tuple[Option, ...]] = SETTINGS + COMMAND_OPTIONS
BY_KEY: Final[Mapping[str, Option]] = {o.key: o for o in OPTIONS}
#: What :class:`Settings` (and :class:`lmc.Interpreter`) take by name.
SETTING_KEYS: Final = frozenset(o.key for o in SETTINGS) | {"mcp_servers"}


# -- checking values ---------------------------------------------------------------------------


def _text(label: str, value: object) -> str:
    if isinstance(value, str) and value:
        return value
    raise ConfigError(f"{label} must be a non-empty string, not {value!r}")


def _path(label: str, value: object) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return _text(label, value)


def _bool(label: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
    raise ConfigError(f"{label} must be true or false, not {value!r}")


def _number(spec: Option, label: str, value: object) -> float:
    whole = spec.kind == "int"
    what = "a whole number" if whole else "a number"
    if isinstance(value, str):
        try:
            value = int(value.strip()) if whole else float(value.strip())
        except ValueError:
            raise ConfigError(f"{label} must be {what}, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        raise ConfigError(f"{label} must be {what}, not {value!r}")
    number = value if whole else float(value)
    low, high = spec.minimum, spec.maximum
    if low is not None and high is not None and not low <= number <= high:
        raise ConfigError(f"{label} must be between {low} and {high}, not {value}")
    if low is not None and number < low:
        raise ConfigError(f"{label} must be at least {low:g}, not {value}")
    if high is not None and number > high:
        raise ConfigError(f"{label} must be at most {high:g}, not {value}")
    return number


def _choice(spec: Option, label: str, value: object) -> str:
    if isinstance(value, str):
        lowered = value.strip().lower()
        lowered = spec.aliases.get(lowered, lowered)
        if lowered in spec.choices:
            return lowered
    raise ConfigError(f"{label} must be one of {', '.join(spec.choices)}, not {value!r}")


_MIB: Final = 1024**2
_UNITS: Final = {"": 1, "k": 1024, "m": _MIB, "g": 1024**3, "t": 1024**4}


def parse_size(label: str, value: object) -> int:
    """A size in bytes from ``2147483648``, ``"2G"``, ``"512 MiB"``; at least 1 MiB."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "").removesuffix("b").removesuffix("i")
        number, unit = text.rstrip("kmgt"), text[len(text.rstrip("kmgt")) :]
        try:
            size = int(float(number) * _UNITS[unit])
        except (ValueError, KeyError):
            raise ConfigError(
                f"{label} must be a size such as 2GiB or 512MiB, not {value!r}"
            ) from None
    else:
        raise ConfigError(f"{label} must be a size such as 2GiB or 512MiB, not {value!r}")
    if size < _MIB:
        raise ConfigError(f"{label} must be at least 1 MiB, not {value!r}")
    return size


def _paths(label: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part for part in value.split(os.pathsep) if part)
    if isinstance(value, list | tuple) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ConfigError(f"{label} must be a list of paths, not {value!r}")


def _table_of_names(label: str, value: object) -> dict[str, str]:
    """A table of names (``{python = "python3"}``), or ``a=b,c=d`` in a variable."""
    if isinstance(value, str):
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if any(not sep or not name.strip() for name, sep, _ in pairs):
            raise ConfigError(
                f"{label} must be NAME=VALUE pairs separated by commas, not {value!r}"
            )
        return {name.strip(): text.strip() for name, _, text in pairs}
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise ConfigError(f"{label} must be a table of strings, not {value!r}")


def convert(spec: Option, value: object, origin: str | None = None) -> Any:
    """``value`` (from a file, a variable, a flag or a keyword) as the option's type.

    ``origin`` names where it came from in the error (``temperature (LMC_TEMPERATURE) must
    be ...``). ``"none"`` or ``""`` from a variable resets a nullable option."""
    label = spec.key if origin is None else f"{spec.key} ({origin})"
    if value is None or (
        spec.nullable and isinstance(value, str) and value.strip().lower() in ("", "none")
    ):
        if spec.nullable:
            return None
        raise ConfigError(f"{label} cannot be none")
    kind = spec.kind
    if kind == "text":
        return _text(label, value)
    if kind == "path":
        return _path(label, value)
    if kind == "bool":
        return _bool(label, value)
    if kind in ("int", "float"):
        return _number(spec, label, value)
    if kind == "choice":
        return _choice(spec, label, value)
    if kind == "paths":
        return _paths(label, value)
    if kind == "size":
        return parse_size(label, value)
    if kind == "table":
        return _table_of_names(label, value)
    if isinstance(value, str):  # names: "A:B", "A, B" or "A B" from a variable
        return tuple(part for part in value.replace(":", " ").replace(",", " ").split() if part)
    return tuple(_text(label, v) for v in value)  # type: ignore[attr-defined]


def settings_with(
    base: Settings | None, values: Mapping[str, object], origin: str | None = None
) -> Settings:
    """``base`` (or the defaults) with ``values`` by config key, each checked; a wrong name
    is a :class:`ConfigError` naming the known ones."""
    settings = Settings() if base is None else dataclasses.replace(base)
    for key, value in values.items():
        if key == "mcp_servers":
            settings.mcp_servers = dict(value or {})  # type: ignore[call-overload]
            continue
        spec = BY_KEY.get(key)
        if spec is None or not spec.setting:
            known = ", ".join(o.key for o in SETTINGS)
            where = f" ({origin})" if origin else ""
            raise ConfigError(f"unknown setting {key!r}{where}", hint=f"known: {known}")
        setattr(settings, key, convert(spec, value, origin))
    return settings


def checked(settings: Settings) -> Settings:
    """``settings`` with every value checked (a Settings built by hand may hold anything)."""
    return settings_with(settings, {o.key: getattr(settings, o.key) for o in SETTINGS})
