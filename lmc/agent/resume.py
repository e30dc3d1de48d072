"""What the model is told when a stored conversation is resumed in a new session.

The kernels of the session that wrote the conversation are gone: variables, imports, defined
functions, the shell's ``cd`` and exports. Without being told, the model's next block uses a
name that no longer exists. So resuming a conversation in which code ran adds one note to the
model's context (a developer message) that says so and names what was lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from lmc.agent.history import Entry
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


def resume_note(entries: Sequence[Entry]) -> Entry | None:
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
    lost = [_LOST[name] for name in languages if name in _LOST] or ["their state"]
    kernels = ", ".join(languages)
    text = (
        f"This conversation was resumed in a new session: the {kernels} "
        f"kernel{'s are' if len(languages) > 1 else ' is'} fresh, so {'; '.join(lost)} from "
        "earlier in this conversation are gone. Re-create what you need before using it."
    )
    note: Message = {"role": "computer", "type": "message", "content": text}
    harmony = render_message(HarmonyMessage.from_text("developer", text))
    return Entry(note, harmony)
