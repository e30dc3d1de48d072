"""Harmony values: messages, their content, and whole conversations.

The JSON shape is that of openai-harmony's ``Conversation.to_json()`` so that fixtures and
outside tools can be read and written as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ASSISTANT", "DEVELOPER", "ROLES", "SYSTEM", "TOOL", "USER", "Message", "TextContent"]

SYSTEM = "system"
DEVELOPER = "developer"
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"
ROLES = (SYSTEM, DEVELOPER, USER, ASSISTANT, TOOL)


@dataclass(frozen=True, slots=True)
class TextContent:
    """Plain text content of a message."""

    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(slots=True)
class Message:
    """One Harmony message.

    ``role`` is one of :data:`ROLES`; a tool's message has role ``tool`` and the tool's name
    (``python``, ``functions.get_weather``) in ``name``, which is what Harmony writes as its
    author. ``content`` holds ``TextContent`` and, for system/developer messages, the
    structured contents defined by the renderer module.
    """

    role: str
    content: list[Any] = field(default_factory=list)
    name: str | None = None
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None

    @property
    def text(self) -> str:
        """The concatenated text of all text contents."""
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    def to_json(self) -> dict[str, Any]:
        """The openai-harmony JSON shape; optional fields appear only when set."""
        out: dict[str, Any] = {
            "role": self.role,
            "name": self.name,
            "content": [c.to_json() for c in self.content],
        }
        for key in ("channel", "recipient", "content_type"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_text(
        cls,
        role: str,
        text: str,
        *,
        name: str | None = None,
        channel: str | None = None,
        recipient: str | None = None,
        content_type: str | None = None,
    ) -> Message:
        return cls(role, [TextContent(text)], name, channel, recipient, content_type)
