"""``lmc.Interpreter``: the Python API of the agent, in the shape of Open Interpreter's.

It owns the pieces and their lifetimes (the model backend, the computer, the conversation
store), all created lazily, and hands each turn to :class:`lmc.agent.loop.Loop`. Pass a
``backend`` or a ``computer`` to share one; they are then not closed here.

Ctrl-C: a ``KeyboardInterrupt`` raised while the model writes stops the generation and keeps
the partial message; while code runs, it interrupts the kernel. Either way the history is
made consistent (and stored), then the ``KeyboardInterrupt`` goes on to the caller, so a
terminal returns to its prompt and the Interpreter is ready for the next message. A streaming
consumer that catches the ``KeyboardInterrupt`` itself should ``close()`` the stream (or drop
it) so that the same clean-up runs before its next ``chat``.
:meth:`Interpreter.cancel` does the same from another thread, without an exception.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Generator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmc.agent.chatting import PRESTART, ChatMixin, Confirm
from lmc.agent.checkpoints import Checkpointer, RewindReport
from lmc.agent.compaction import Compactor
from lmc.agent.display import Renderer
from lmc.agent.git_guard import GitGuardHooks
from lmc.agent.history import Entry, Transcript, result_for_dangling_call
from lmc.agent.job_tool import JobTools
from lmc.agent.kept_state import attach_state, kernel_state_for
from lmc.agent.loop import ComputerLike, Loop, LoopSettings
from lmc.agent.pieces import (
    backend_config,
    browser_tools,
    mcp_tools,
    patch_tool,
    sandbox_options,
    tool_set,
)
from lmc.agent.storage import ConversationStore, TokenUsage, new_conversation_id
from lmc.agent.tools import (
    argument_schemas,
    developer_message,
    function_specs,
    system_message,
)
from lmc.agent.workspace_api import WorkspaceMixin
from lmc.backends.base import Backend, Generation, SamplingSettings
from lmc.errors import ConfigError, InterpreterClosedError, LmcError
from lmc.messages import Chunk, Message, validate_message
from lmc.settings import SETTING_KEYS, Settings, checked, settings_with

if TYPE_CHECKING:
    from lmc.agent.escalation import OfferRerun
    from lmc.browser.tools import BrowserTools
    from lmc.computer import Computer
    from lmc.computer.state import KernelState
    from lmc.mcp.tools import McpTools

__all__ = ["PRESTART", "Confirm", "Interpreter"]

#: Seconds close() waits for a running turn to stop before it frees what the turn uses.
CLOSE_WAIT = 30.0


class Interpreter(ChatMixin, WorkspaceMixin):
    """A conversation with a gpt-oss model that runs code on this computer.

    ``chat(message)`` runs one turn. With ``stream=True`` it returns a generator of LMC chunks
    (the seed's streaming response); otherwise it returns the new messages. Before each code
    block runs, a confirmation chunk is yielded; with ``auto_run`` off, a streaming consumer
    that stops there (``break``) runs nothing, and asking for the next chunk runs the code.
    ``confirm`` is asked first when given: True runs, False declines (the model is told), a
    string runs that edited code instead.

    ``mcp_servers`` maps a name to an MCP server (an :class:`lmc.mcp.McpServerConfig`, or a
    table as in config.toml: ``{"command": ..., "args": [...]}`` or ``{"url": ...}``); their
    tools are offered to the model as ``functions.NAME__TOOL`` and confirmed like code (the
    block is ``{"type": "tool_call", "format": "NAME.TOOL", "content": ARGUMENTS_JSON}``).
    ``api_base`` (a server's root or /v1 URL) is reached in ``api_style`` ("auto",
    "completions", "chat", "responses"; see :mod:`lmc.backends.detect`) with ``api_key`` (a
    keyword, never stored), else ``$LMC_API_KEY``, else the variable ``api_key_env`` names.
    ``sandbox`` (``"workspace"``, ``"read-only"``, ``"off"``; None: workspace where a sandbox
    works), ``network`` and ``workdir`` say how the code is contained (see
    :class:`lmc.Computer`); :meth:`set_sandbox` changes them during a conversation.
    ``kernel_gateway`` (with ``kernel_gateway_token``, ``kernel_gateway_kernels``, ...) runs
    the code on a Jupyter Kernel/Enterprise Gateway instead (:mod:`lmc.computer.gateway`).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        /,
        *,
        conversation_id: str | None = None,
        renderer: Renderer | None = None,
        computer: Computer | ComputerLike | None = None,
        backend: Backend | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        """``settings`` (see :class:`lmc.settings.Settings`), or the defaults, with any of its
        options given as keywords named like their config key (``api_base=``, ``auto_run=``,
        ``db_path=``, ...); every value is checked (:class:`ConfigError` on a bad one)."""
        unknown = sorted(set(options) - SETTING_KEYS)
        if unknown:
            raise TypeError(f"Interpreter() got an unexpected keyword argument {unknown[0]!r}")
        s = settings_with(checked(settings or Settings()), options)
        #: The options this Interpreter was made with (checked).
        self.settings = s
        self.auto_run = s.auto_run
        self.reasoning = s.reasoning
        self.instructions = s.instructions
        #: AGENTS.md text beyond this many bytes is left out (0: AGENTS.md is not read).
        self.agents_md_max_bytes = s.agents_md_max_bytes
        self.renderer = renderer
        #: The speech-to-text model for audio messages (``--stt-model``; None: the default).
        self.stt_model = s.stt_model
        self.config = backend_config(s, api_key)
        self._sandbox = sandbox_options(s)
        if s.sandbox is not None and computer is None:
            from lmc.computer.sandbox import resolve_policy

            # Fail now, not at the first block: a mode this machine lacks, a bad hide entry.
            resolve_policy(s.sandbox, network=s.network, workdir=s.workdir, hide=s.sandbox_hide)
        self._backend = backend
        self._owns_backend = backend is None
        self._computer = computer
        self._owns_computer = computer is None
        self._db_path = s.db_path
        self._store: ConversationStore | None = None
        self._conversation_id: str | None = None
        #: The id the next conversation gets: its kernels keep their state under it from
        #: the start (they start before its first message).
        self._next_id = new_conversation_id()
        self._cancel = threading.Event()
        #: Set when close() begins: from then on no model is opened, no kernel started, no
        #: store reopened, and a running turn ends at its next step.
        self._closed = threading.Event()
        self._busy = threading.Lock()
        self._turn_thread: int | None = None  # the thread that consumes the current turn
        # The last turn's stream, weakly: a consumer that drops it closes it at once.
        self._active: weakref.ref[Generator[Chunk, None, None]] | None = None
        self._prefix_cache: tuple[tuple[object, ...], str] | None = None
        #: Tokens by turn (the position of the turn's user message), this conversation.
        self._usage: dict[int, TokenUsage] = {}
        self.tools: McpTools | None = mcp_tools(s)
        #: gpt-oss's apply_patch (None: off, the working directory read-only, or a gateway).
        self.patch_tool = patch_tool(s, self._workdir)
        #: gpt-oss's browser tool (``browser="searxng"``, ``"exa"``, ``"local"``), made when
        #: the model is loaded or first prompted (see :meth:`_open_browser`).
        self.browser_tools: BrowserTools | None = None
        #: ``functions.jobs`` (lmc.agent.job_tool), while blocks can be handed back as jobs.
        self.job_tools: JobTools | None = None
        if s.block_timeout and (computer is None or hasattr(computer, "jobs")):
            self.job_tools = JobTools(lambda: getattr(self._computer, "jobs", None))
        self._loop = Loop(
            backend=self._turn_backend,
            computer=self._turn_computer,
            transcript=Transcript(),
            prefix=self._prefix,
            settings=LoopSettings(
                sampling=SamplingSettings(
                    temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=s.seed
                ),
                max_steps=s.max_steps,
                output_limit=s.output_limit,
            ),
            cancel=self._cancel,
            record=self._record,
            replace=self._replace,
            tools=tool_set(self.tools, self.job_tools, self.patch_tool),
            usage=self._count_usage,
        )
        if s.compaction:
            self._loop.compactor = Compactor(self._loop, live_names=self._live_names)
        #: What the last :meth:`undo` did (files restored, messages removed).
        self.last_undo: RewindReport | None = None
        self._checkpoint_caps = (s.checkpoint_max_file_size, s.checkpoint_max_files)
        if s.checkpoints:
            self._loop.block_hooks = Checkpointer(
                store=lambda: self.store,
                conversation=lambda: self._conversation_id,
                transcript=self._loop.transcript,
                workdir=self._workdir,
                max_file_bytes=self._checkpoint_caps[0],
                max_files=self._checkpoint_caps[1],
            )
        else:  # what the code sets up for git to run is switched off all the same
            self._loop.block_hooks = GitGuardHooks(self._workdir)
        if conversation_id is not None:
            self._resume(conversation_id)
        if computer is not None:
            attach_state(computer, self._kernel_state())

    def _count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this model: the browser sizes its views with it."""
        return self.backend.count_tokens(text)

    def _token_lengths(self, text: str) -> list[int] | None:
        """Each token's decoded length, where the model is tokenized here (the browser ends
        views with it as the reference does)."""
        return self.backend.token_lengths(text)

    def _open_browser(self) -> None:
        """Make the browser tool the settings ask for; ConfigError (one line) when its backend
        is unusable (no URL, no key, not a folder), before the model is asked anything."""
        s = self.settings
        if s.browser is None or self.browser_tools is not None:
            return
        self.browser_tools = browser_tools(
            s.browser,
            s.browser_url,
            s.browser_allow_private,
            self._count_tokens,
            self._token_lengths,
        )
        # apply_patch last: the reference's namespace ends with it.
        self._loop.tools = tool_set(self.tools, self.browser_tools, self.job_tools, self.patch_tool)

    # -- the pieces, created when first needed ------------------------------------------------

    def load(self) -> None:
        """Open the model now (it is otherwise opened by the first chat), e.g. under a spinner.

        MCP servers start in the background meanwhile."""
        self._open_browser()
        if self.tools is not None:
            self.tools.start()
        self._get_backend()

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise InterpreterClosedError("this Interpreter has been closed")

    def _turn_backend(self) -> Backend:
        """The backend for the loop's next request: none once close() began."""
        self._check_open()
        return self._get_backend()

    def _turn_computer(self) -> Computer | ComputerLike:
        """The computer for the loop's next run: none once close() began."""
        self._check_open()
        return self.computer

    def _get_backend(self) -> Backend:
        if self._backend is None:
            self._check_open()
            from lmc.backends import open_backend

            self._backend = open_backend(self.config)
        return self._backend

    @property
    def backend(self) -> Backend:
        return self._get_backend()

    @property
    def computer(self) -> Computer | ComputerLike:
        """The :class:`lmc.Computer` that runs the model's code."""
        if self._computer is None:
            self._check_open()
            from lmc.computer import Computer
            from lmc.computer.gateway import gateway_config

            # With a kernel gateway, kernels run there (its deployment contains them).
            self._computer = Computer(
                **self._sandbox, gateway=gateway_config(self.settings), state=self._kernel_state()
            )
        return self._computer

    def adopt_computer(self, computer: Computer, conversation_id: str) -> None:
        """Run code on ``computer``, made ahead of this new interpreter from its settings for
        the conversation it starts next, ``conversation_id`` (whose folder its kernels keep
        their state in), and close it as its own (``lmc run`` launches the shell meanwhile)."""
        if self._computer is not None or self._conversation_id is not None:
            raise LmcError("only a new interpreter can take a computer made ahead of it")
        self._computer, self._owns_computer, self._next_id = computer, True, conversation_id

    def _live_names(self) -> str | None:
        """The kernels' live names with their types, for the model after a compaction."""
        from lmc.computer.state import listing

        state = self._kernel_state()
        return listing(state.folder) if state is not None else None

    def _kernel_state(self) -> KernelState | None:
        """Where this conversation's kernels keep their state (lmc.computer.state)."""
        return kernel_state_for(self.settings, self._conversation_id or self._next_id)

    def set_sandbox(self, mode: str | None = None, *, network: bool | None = None) -> list[str]:
        """Change how code is contained; the kernels restart (returns the languages whose
        state was lost; the model is told at its next run)."""
        computer = self.computer
        change = getattr(computer, "set_sandbox", None)
        if change is None:
            raise LmcError("this computer has no sandbox to change")
        lost: list[str] = change(mode, network=network)
        policy = getattr(computer, "sandbox", None)
        if policy is not None:
            self._sandbox["sandbox"] = policy.mode
            self._sandbox["network"] = policy.network
        return lost

    @property
    def store(self) -> ConversationStore:
        """The conversation database."""
        if self._store is None:
            self._check_open()
            self._store = ConversationStore(self._db_path)
        return self._store

    @property
    def conversation_id(self) -> str | None:
        """The stored conversation's id (None until the first message)."""
        return self._conversation_id

    @property
    def offer_rerun(self) -> OfferRerun | None:
        """Asked ``(block, lacked)`` when the sandbox blocked a block for want of the network
        (``lacked == "network"``) or of write access / a hidden path (``"unsandboxed"``): True
        runs that one block again, once, in a fresh kernel that has it; the sandbox stays as
        it was for later blocks (see :mod:`lmc.agent.escalation`). None (the default): never
        offered. ``auto_run`` does not answer it: only this callback does."""
        return self._loop.offer_rerun

    @offer_rerun.setter
    def offer_rerun(self, offer: OfferRerun | None) -> None:
        self._loop.offer_rerun = offer

    @property
    def checkpointer(self) -> Checkpointer | None:
        """The checkpoints of the working directory around each block (None when off)."""
        hooks = self._loop.block_hooks
        return hooks if isinstance(hooks, Checkpointer) else None

    @property
    def max_steps(self) -> int:
        return self._loop.settings.max_steps

    @max_steps.setter
    def max_steps(self, value: int) -> None:
        if value < 1:
            raise ConfigError(f"max_steps must be at least 1, got {value}")
        self._loop.settings.max_steps = value

    # -- the conversation ---------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The merged LMC messages of the conversation, oldest first."""
        return self._loop.transcript.messages

    @messages.setter
    def messages(self, messages: list[Message]) -> None:
        """Replace the conversation (as Open Interpreter allows); it is stored as a new one."""
        checked = [validate_message(m) for m in messages]
        self.reset()
        for message in checked:
            self._loop.transcript.entries.append(Entry(message, None))
            self._record(self._loop.transcript.entries[-1])

    def reset(self) -> None:
        """Start a new conversation (the old one stays stored); kernels are restarted."""
        self._loop.forget()
        self._conversation_id = None
        self._next_id = new_conversation_id()
        self._usage = {}
        if self._owns_computer and self._computer is not None:
            close = getattr(self._computer, "close", None)
            if close is not None:
                close()
            self._computer = None
        elif self._computer is not None:
            attach_state(self._computer, self._kernel_state())

    def _workdir(self) -> Path:
        where = getattr(self._computer, "cwd", None) or self._sandbox.get("workdir")
        return Path(where) if where is not None else Path.cwd()

    def token_usage(self) -> tuple[int, int]:
        """(tokens the next prompt takes, the model's context size)."""
        backend = self._get_backend()
        return self._loop.prompt_tokens(backend), backend.context_size

    def token_counts(self) -> tuple[TokenUsage, TokenUsage]:
        """(the last turn's tokens, the whole conversation's), as the model servers counted
        them: prompt, completion and reasoning tokens of every model call."""
        if not self._usage:
            return TokenUsage(), TokenUsage()
        last = self._usage[max(self._usage)]
        return last, sum(self._usage.values(), TokenUsage())

    def _count_usage(self, generation: Generation) -> None:
        turn = self._loop.transcript.last_user_index() or 0
        usage = TokenUsage(
            generation.prompt_tokens,
            generation.completion_tokens,
            generation.reasoning_tokens,
            generation.model_calls,
        )
        self._usage[turn] = self._usage.get(turn, TokenUsage()) + usage
        if self._conversation_id is not None:
            self.store.record_usage(self._conversation_id, turn, usage)

    def _resume(self, conversation_id: str) -> None:
        self._conversation_id = self.store.resolve(conversation_id)
        self._usage = self.store.usage(self._conversation_id)
        stored = self.store.load_stored(self._conversation_id)
        self._loop.transcript.entries[:] = [Entry(s.message, s.harmony, s.meta) for s in stored]
        from lmc.agent.resume import resume_note

        entries = self._loop.transcript.entries
        state = self._kernel_state()
        notes = (result_for_dangling_call(entries), resume_note(entries, state))
        for note in notes:
            if note is not None:
                entries.append(note)
                self._record(note)

    def _record(self, entry: Entry) -> None:
        if self._conversation_id is None:
            title = entry.message["content"] if entry.message["role"] == "user" else ""
            self._conversation_id = self.store.create(
                title if isinstance(title, str) else "", self._next_id
            )
        self.store.append(self._conversation_id, entry.message, entry.harmony, entry.meta)

    def _replace(self, index: int, entry: Entry) -> None:
        if self._conversation_id is not None:
            self.store.replace(self._conversation_id, index, entry.message, entry.harmony)

    def _prefix(self) -> str:
        """The system and developer messages (rendered once a day, as the date is in them)."""
        from lmc.harmony.render import render_conversation

        cwd = getattr(self._computer, "cwd", None)
        cwd = str(cwd) if cwd is not None else None
        extra = self.tools.descriptions() if self.tools is not None else []
        if self.job_tools is not None:
            extra = [*extra, *self.job_tools.descriptions()]
        patch_instructions = ""
        if self.patch_tool is not None:  # gpt-oss's apply_patch, last as in the reference
            from lmc.agent.patch_tool import apply_patch_instructions

            extra = [*extra, *self.patch_tool.descriptions()]
            patch_instructions = apply_patch_instructions()
        names = tuple(tool.name for tool in extra)
        self._open_browser()
        browser = self.browser_tools is not None
        agents = self.agents_md().text
        key = (date.today(), self.reasoning, self.instructions, cwd, names, browser, agents)
        if self._prefix_cache is None or self._prefix_cache[0] != key:
            instructions = self.instructions
            if agents:  # without AGENTS.md the prompt is what it always was
                instructions = f"{instructions.strip()}\n\n{agents}" if instructions else agents
            messages = [
                system_message(self.reasoning, browser=browser),
                developer_message(instructions, cwd, extra, patch_instructions),
            ]
            self._prefix_cache = (key, render_conversation(messages, next_role=None))
            # Function arguments are sampled under a grammar from these schemas (llama.cpp).
            self._loop.settings.sampling.argument_schemas = argument_schemas(messages)
            # Servers that template the conversation themselves get the tools as functions.
            self._loop.settings.sampling.functions = function_specs(messages)
        return self._prefix_cache[1]

    def cancel(self) -> None:
        """Stop the model (or the running code) from another thread; the turn ends quietly."""
        self._cancel.set()
        if self.tools is not None:
            self.tools.cancel()
        if self._loop.running and self._computer is not None:
            self._computer.interrupt()

    def close(self) -> None:
        """Free the model, the kernels and the database (what this Interpreter created).

        A turn still running is stopped first, as :meth:`cancel` does: its kernels are shut
        down at once (the run ends "cut short"), and the model and database are freed once
        the turn has ended (waiting up to :data:`CLOSE_WAIT` seconds for a turn consumed in
        another thread). After close() began no model request is sent and no kernel starts.
        """
        self._closed.set()
        self.cancel()
        if self._owns_computer and self._computer is not None:
            computer, self._computer = self._computer, None
            close = getattr(computer, "close", None)
            if close is not None:
                close()
        self._stop_turn()
        if self._owns_backend and self._backend is not None:
            self._backend.close()
            self._backend = None
        if self._store is not None:
            self._store.close()
            self._store = None
        if self.tools is not None:
            self.tools.close()
        if self.browser_tools is not None:
            self.browser_tools.close()
        hooks = self._loop.block_hooks
        if isinstance(hooks, Checkpointer):
            hooks.close()  # a background snapshot still running: its git is waited for

    def _stop_turn(self) -> None:
        """End the running turn: a stream suspended in this thread (or one whose thread is
        gone) is closed here; one another thread consumes stops at its next step."""
        consumer = self._turn_thread
        elsewhere = consumer not in (None, threading.get_ident()) and any(
            thread.ident == consumer for thread in threading.enumerate()
        )
        if elsewhere and self._busy.acquire(timeout=CLOSE_WAIT):
            self._busy.release()
            return
        with contextlib.suppress(LmcError):  # still running elsewhere: nothing more to do
            self._finish_abandoned_turn()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
