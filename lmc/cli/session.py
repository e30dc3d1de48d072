"""What ``lmc`` and ``lmc run`` share: settings, the output mode, the Interpreter, one turn.

Errors reach the person here and only here: :func:`report` prints one line (and a hint) on
stderr, with the traceback only under ``--verbose``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from lmc.cli.options import SharedOptions
from lmc.cli.sandbox_settings import interpreter_settings, resolve_sandbox
from lmc.config import Settings, data_dir, load_settings
from lmc.errors import LmcError, SandboxUnavailableError
from lmc.messages import Block, Chunk, Message
from lmc.messages.sanitize import for_terminal
from lmc.terminal.base import BlockRenderer
from lmc.terminal.signals import Terminated

if TYPE_CHECKING:
    from lmc.agent.approvals import Answer

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LOOP",
    "EXIT_NO_ANSWER",
    "EXIT_USAGE",
    "Output",
    "Session",
    "Turn",
    "check_kernel_gateway",
    "make_interpreter",
    "make_output",
    "open_session",
    "report",
    "resolve_resume",
    "run_turn",
    "settings_for",
]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_ANSWER = 3
#: The loop guard ended the turn: the model ran the same code with the same output again and
#: again (lmc.agent.loop_guard).
EXIT_LOOP = 4
EXIT_INTERRUPTED = 130


def report(exc: BaseException, *, verbose: bool, err: TextIO | None = None) -> int:
    """Tell the person what went wrong in one line; return the exit status to use.

    A closed pipe is not reported: the reader is gone, so it ends the command quietly (the
    ``BrokenPipeError`` goes on, see :mod:`lmc.cli.streams`)."""
    if isinstance(exc, BrokenPipeError):
        raise exc
    err = sys.stderr if err is None else err
    if verbose:
        import traceback  # with textwrap: not for a run that goes well

        traceback.print_exception(exc, file=err)
    # An error may quote what the model or code wrote (a file name, a tool's reply).
    if isinstance(exc, LmcError):
        err.write(f"lmc: error: {for_terminal(str(exc))}\n")
        if exc.hint:
            err.write(f"lmc: hint: {for_terminal(exc.hint)}\n")
    else:
        err.write(f"lmc: unexpected error: {type(exc).__name__}: {for_terminal(str(exc))}\n")
        if not verbose:
            err.write("lmc: hint: this is a bug in lmc; --verbose shows the traceback\n")
    err.flush()
    return EXIT_ERROR


def settings_for(options: SharedOptions) -> Settings:
    return load_settings(options.flags(), profile=options.profile)


@dataclass
class Output:
    """Where chunks go: a renderer, plus what the CLI needs to talk to the person."""

    renderer: Any  # RichRenderer | PlainRenderer | JsonRenderer
    mode: str  # "rich" | "plain" | "json"
    say: Callable[[str], None]  # a note for the person (stderr in json mode)
    console: Any = None  # the rich Console in rich mode


def _plain_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return True
    isatty = getattr(stream, "isatty", None)
    return not (isatty is not None and isatty())


def browser_available(env: Mapping[str, str] | None = None) -> bool:
    """Whether opening a browser shows something: ``BROWSER`` is set, or a desktop is there.

    Without a display, Python's webbrowser falls back to text browsers that would take over
    the terminal, so lmc does not ask it then.
    """
    env = os.environ if env is None else env
    if env.get("BROWSER") or sys.platform in ("darwin", "win32"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def open_in_browser(path: Any) -> bool:
    """Open an HTML file in the person's browser (``BROWSER`` is honoured)."""
    import webbrowser

    try:
        return webbrowser.open(path.resolve().as_uri())
    except webbrowser.Error:
        return False


def html_opener(stream: TextIO, settings: Settings) -> Callable[[Any], bool] | None:
    """How to show the html tool's documents: in the browser with a person at the terminal
    (standard input and output are terminals and a browser can open), else not at all (the
    renderer only says where the file is). Not at all either while the sandbox keeps the
    code off the network: the person's browser has the network, and a document the code
    wrote would carry data out (an ``<img>`` or a refresh to any address)."""
    from lmc.agent.display import is_terminal

    if settings.sandbox != "off" and not settings.network:
        return None
    if not (is_terminal(sys.stdin) and is_terminal(stream) and browser_available()):
        return None
    return open_in_browser


def make_output(options: SharedOptions, settings: Settings, stream: TextIO | None = None) -> Output:
    """The JSON, plain or rich renderer, by --json, NO_COLOR and whether stdout is a terminal."""
    stream = sys.stdout if stream is None else stream
    from lmc.terminal.artifacts import ArtifactStore

    artifacts = ArtifactStore(data_dir() / "outputs")
    if options.json:
        from lmc.terminal.json_lines import JsonRenderer

        def say_err(text: str) -> None:
            sys.stderr.write(f"lmc: {for_terminal(text)}\n")
            sys.stderr.flush()

        return Output(JsonRenderer(stream), "json", say_err)
    if _plain_wanted(stream):
        from lmc.terminal.plain import PlainRenderer

        plain = PlainRenderer(
            stream,
            show_reasoning=settings.show_reasoning,
            artifacts=artifacts,
            open_html=html_opener(stream, settings),
        )

        def say_plain(text: str) -> None:
            plain.close()
            stream.write(f"lmc: {for_terminal(text)}\n")
            stream.flush()

        return Output(plain, "plain", say_plain)
    from rich.console import Console
    from rich.text import Text

    from lmc.terminal.images import detect_protocol
    from lmc.terminal.rich_renderer import RichRenderer

    console = Console(file=stream, highlight=False)
    renderer = RichRenderer(
        console,
        show_reasoning=settings.show_reasoning,
        artifacts=artifacts,
        image_protocol=detect_protocol(),
        open_html=html_opener(stream, settings),
    )

    def say_rich(text: str) -> None:
        console.print(Text(for_terminal(text), style="dim"))

    return Output(renderer, "rich", say_rich, console)


def resolve_resume(resume: str | None, db_path: str | None) -> str | None:
    """The conversation id ``--resume`` names ("latest": the newest one)."""
    if resume is None:
        return None
    from lmc.agent.storage import ConversationStore

    with ConversationStore(db_path) as store:
        if resume == "latest":
            conversations = store.list_conversations()
            if not conversations:
                raise LmcError(
                    "there is no stored conversation to resume", hint="start one with `lmc`"
                )
            return conversations[0].id
        return store.resolve(resume)


def sandbox_for(settings: Settings) -> Any:
    """The sandbox policy ``settings`` ask for; warns on stderr when the default falls back
    to no sandbox; raises :class:`SandboxUnavailableError` when one was asked for in vain."""
    policy, warning = resolve_sandbox(settings)
    if warning is not None:
        sys.stderr.write(f"lmc: warning: {warning}\n")
        sys.stderr.flush()
    return policy


def check_kernel_gateway(settings: Settings) -> None:
    """Raise :class:`~lmc.errors.ComputerError` (one line naming the URL or the token) when
    the kernel gateway ``settings`` name cannot run python: before the model is asked."""
    if settings.kernel_gateway:
        from lmc.computer.gateway import check_gateway, gateway_config

        gateway = gateway_config(settings)
        assert gateway is not None
        check_gateway(gateway)


def warn_cpu_only_once(say: Callable[[str], None]) -> None:
    """At the first chat on a machine with a GPU that llama.cpp cannot use, say so once
    (``lmc doctor`` says it every time)."""
    from lmc.backends.gpu import cpu_only_warning

    stamp = data_dir() / "gpu-warning-given"
    if stamp.exists():
        return
    warning = cpu_only_warning()
    if warning is None:
        return
    say(f"warning: {warning}")
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        pass  # said again next time: better than never


def make_interpreter(
    settings: Settings,
    conversation_id: str | None = None,
    backend: Any = None,
    computer: Any = None,
) -> Any:
    """An :class:`lmc.Interpreter` configured from ``settings`` (not yet loaded); on
    ``backend`` when given (``lmc serve`` shares one model), which it then does not close;
    on ``computer`` when given (``lmc serve`` starts kernels on first code), likewise."""
    from lmc import Interpreter

    chosen = interpreter_settings(settings, sandbox_for(settings))
    return Interpreter(chosen, conversation_id=conversation_id, backend=backend, computer=computer)


@dataclass(frozen=True)
class Session:
    """What every command that talks to the model needs, built from the same settings."""

    settings: Settings
    output: Output
    interpreter: Any
    conversation_id: str | None


def open_session(options: SharedOptions, head_start: Any = None) -> Session | int:
    """Settings, output and interpreter for a command; or, when they cannot be had, the exit
    status after reporting why in one line (verbose as the settings say, once they are read).
    ``head_start``: a :class:`lmc.cli.head_start.HeadStart` the interpreter may take."""
    verbose = options.verbose
    try:
        settings = settings_for(options) if head_start is None else head_start.loaded
        verbose = settings.verbose
        output = make_output(options, settings)
        conversation_id = resolve_resume(options.resume, settings.db_path)
        check_kernel_gateway(settings)
        interpreter = make_interpreter(settings, conversation_id)
        if head_start is not None:
            head_start.hand_to(interpreter)
    except SandboxUnavailableError as exc:  # asked for a sandbox this machine cannot give
        report(exc, verbose=verbose)
        return EXIT_USAGE
    except LmcError as exc:
        return report(exc, verbose=verbose)
    if settings.verbose:  # on stderr, like the context line: stdout stays the answer
        sys.stderr.write(f"lmc: {agents_md_line(interpreter.agents_md().paths)}\n")
    return Session(settings, output, interpreter, conversation_id)


def agents_md_line(paths: tuple[Any, ...]) -> str:
    """Which AGENTS.md files brief the model (``--verbose``, ``lmc doctor``)."""
    if not paths:
        return "AGENTS.md: none found from the working directory up to the repository root"
    return "AGENTS.md read: " + ", ".join(str(p) for p in paths)


@dataclass
class Turn:
    """How one message's turn ended."""

    final_answer: bool = False
    interrupted: bool = False
    reason: str | None = None  # why there is no final answer
    chunks: int = 0
    notes: list[str] = field(default_factory=list)


class _Tracker(BlockRenderer):
    """Follows the stream without drawing: did it end in a final answer, and what notes came."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []
        self._note: list[str] = []

    def open_block(self, block: str, language: str) -> None:
        self._note = []

    def on_text(self, block: str, text: str) -> None:
        if block in ("note", "notice"):
            self._note.append(text)

    def close_block(self, block: str) -> None:
        if block in ("note", "notice"):
            self.notes.append("".join(self._note).strip())


def _chunks(
    interpreter: Any, message: str | Message, confirm: Callable[[Block], Answer]
) -> Iterator[Chunk]:
    return iter(interpreter.chat(message, stream=True, display=False, confirm=confirm))


def run_turn(
    interpreter: Any,
    message: str | Message,
    output: Output,
    confirm: Callable[[Block], Answer],
) -> Turn:
    """Send one message and render its chunks; Ctrl-C stops the turn and keeps the history.

    SIGTERM and SIGHUP (:class:`~lmc.terminal.signals.Terminated`) stop it the same way and
    then go on to the command, which closes the session and exits."""
    renderer = output.renderer
    tracker = _Tracker()
    turn = Turn()
    waiting = getattr(renderer, "waiting", None)
    if waiting is not None:
        waiting()
    stream = _chunks(interpreter, message, confirm)
    try:
        for chunk in stream:
            turn.chunks += 1
            tracker.feed(chunk)
            renderer.feed(chunk)
    except KeyboardInterrupt as exc:
        turn.interrupted = True
        interrupted = getattr(renderer, "interrupted", None)
        if interrupted is not None:
            interrupted("interrupted: the conversation so far is kept")
        if isinstance(exc, Terminated):
            raise  # after the same clean-up, the command ends
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        tracker.close()
        if not turn.interrupted:
            renderer.close()
    turn.final_answer = tracker.final_answer and not turn.interrupted
    turn.notes = tracker.notes
    if turn.interrupted:
        turn.reason = "interrupted"
    elif not turn.final_answer:
        turn.reason = (
            tracker.notes[-1] if tracker.notes else "the model stopped without a final answer"
        )
    return turn
