"""What the model is told when a stored conversation is resumed in a new session.

The kernels of the session that wrote the conversation are gone. What their last snapshot
kept (:mod:`lmc.computer.state`: python variables, the shell's ``cd`` and exports) comes
back in the new kernels; everything else (a value that could not be kept, JavaScript and R
state, anything when kernel state is off) does not. Without being told, the model's next
block uses a name that no longer exists, or re-creates what is already there. So resuming a
conversation in which code ran adds one note to the model's context (a developer message)
that says what comes back and what was lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from lmc.agent.history import Entry
from lmc.computer.state import KernelState, saved_summary
from lmc.harmony.render import render_message
from lmc.harmony.types import Message as HarmonyMessage
from lmc.messages import Message

__all__ = ["resume_note"]

_LOST = {
    "python": "python variables, imports and functions",
    "shell": "the shell's working directory (cd) and exported variables",
    "javascript": "JavaScript variables",
    "r": "R objects and loaded libraries",
}


def resume_note(entries: Sequence[Entry], state: KernelState | None = None) -> Entry | None:
    """The note for a resumed conversation, or None when no code ran in it."""
    languages: list[str] = []
    for entry in entries:
        message = entry.message
        if message["role"] == "assistant" and message["type"] == "code":
            language = message["format"]
            if language not in languages:
                languages.append(language)
    if not languages:
        return None
    saved = saved_summary(state.folder) if state is not None else {}
    back = [f"the {name} kernel: {saved[name]}" for name in languages if name in saved]
    fresh = [name for name in languages if name not in saved]
    parts = ["This conversation was resumed in a new session"]
    if back:
        parts.append(f"what the kernels saved after the last block is restored ({'; '.join(back)})")
    if fresh:
        lost = [_LOST[name] for name in fresh if name in _LOST] or ["their state"]
        kernels = ", ".join(fresh)
        parts.append(
            f"the {kernels} kernel{'s are' if len(fresh) > 1 else ' is'} fresh, so "
            f"{'; '.join(lost)} from earlier in this conversation are gone"
        )
    text = ": ".join(parts[:2]) + "".join(f"; {part}" for part in parts[2:]) + "."
    if fresh:
        text += " Re-create what you need before using it."
    note: Message = {"role": "computer", "type": "message", "content": text}
    harmony = render_message(HarmonyMessage.from_text("developer", text))
    return Entry(note, harmony)
