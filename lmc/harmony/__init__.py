"""Harmony, OpenAI's chat format for gpt-oss: rendering and streaming parsing, sans-IO.

No model, no I/O, no threads here: text in, text or events out.
"""

from lmc.harmony.conversation import (
    ChannelConfig,
    Conversation,
    DeveloperContent,
    ReasoningEffort,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from lmc.harmony.events import (
    ContentDelta,
    Event,
    Header,
    MessageEnded,
    MessageStarted,
    ParseProblem,
    Terminator,
)
from lmc.harmony.parser import StreamParser, parse_completion, split_markers
from lmc.harmony.render import render_conversation, render_message
from lmc.harmony.to_lmc import LmcMapper, completion_to_chunks, tool_language
from lmc.harmony.types import Message, TextContent

__all__ = [
    "ChannelConfig",
    "ContentDelta",
    "Conversation",
    "DeveloperContent",
    "Event",
    "Header",
    "LmcMapper",
    "Message",
    "MessageEnded",
    "MessageStarted",
    "ParseProblem",
    "ReasoningEffort",
    "StreamParser",
    "SystemContent",
    "Terminator",
    "TextContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "completion_to_chunks",
    "parse_completion",
    "render_conversation",
    "render_message",
    "split_markers",
    "tool_language",
]
