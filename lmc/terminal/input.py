"""The chat prompt: prompt_toolkit with persistent history and multi-line input.

Enter sends; Esc-Enter (or Alt-Enter) starts a new line; a paste keeps its newlines
(bracketed paste). Ctrl-C clears the line, Ctrl-D on an empty line ends the chat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmc.paths import private_dir, private_file
from lmc.terminal.signals import Terminated, end_prompt_on_signals, restore_handlers

__all__ = ["ChatInput"]


class ChatInput:
    """Reads one message at a time from the person."""

    def __init__(self, history_file: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        history: Any
        #: Why the history is not kept on disk (the data dir is unusable), for the person.
        self.problem: str | None = None
        try:
            # What the person typed (secrets included) is theirs alone: 0700 dir, 0600 file.
            private_file(private_dir(history_file.parent) / history_file.name)
            history = FileHistory(str(history_file))
        except OSError as exc:
            history = InMemoryHistory()
            self.problem = f"the prompt history is not kept: {history_file}: {exc.strerror}"
        self.session: Any = PromptSession(
            history=history,
            key_bindings=bindings,
            multiline=False,
            prompt_continuation=lambda width, line, soft: "… ".rjust(width),
        )

    def read(self, prompt: str = "> ") -> str | None:
        """The next message; "" after Ctrl-C (line cleared), None at Ctrl-D (end)."""
        app = self.session.app
        try:
            return str(self.session.prompt(prompt, pre_run=lambda: end_prompt_on_signals(app)))
        except Terminated:
            raise  # SIGTERM/SIGHUP, not the person's Ctrl-C
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None
        finally:
            restore_handlers()
