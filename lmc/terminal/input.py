"""The chat prompt: prompt_toolkit with persistent history and multi-line input.

Enter sends; Esc-Enter (or Alt-Enter) starts a new line; a paste keeps its newlines
(bracketed paste). Ctrl-C clears the line, Ctrl-D on an empty line ends the chat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["ChatInput"]


class ChatInput:
    """Reads one message at a time from the person."""

    def __init__(self, history_file: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        history_file.parent.mkdir(parents=True, exist_ok=True)
        self.session: Any = PromptSession(
            history=FileHistory(str(history_file)),
            key_bindings=bindings,
            multiline=False,
            prompt_continuation=lambda width, line, soft: "… ".rjust(width),
        )

    def read(self, prompt: str = "> ") -> str | None:
        """The next message; "" after Ctrl-C (line cleared), None at Ctrl-D (end)."""
        try:
            return str(self.session.prompt(prompt))
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None
