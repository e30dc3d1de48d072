"""Render Harmony messages and conversations to text, special tokens as their literal markers.

One message is ``<|start|>author[ to=recipient][<|channel|>channel][ content_type]<|message|>``
then its text and ``<|call|>`` (an assistant message to a tool) or ``<|end|>``. ``<|return|>``
is never written: a final answer that ended in it is stored, and rendered, with ``<|end|>``.
The output matches openai-harmony's renderer byte for byte on its own fixtures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from lmc.errors import HarmonyError
from lmc.harmony.conversation import (
    Conversation,
    DeveloperContent,
    ResponseFormat,
    SystemContent,
    ToolNamespaceConfig,
)
from lmc.harmony.schema_ts import schema_to_typescript, split_lines
from lmc.harmony.tokens import CALL, CHANNEL, END, MESSAGE, START
from lmc.harmony.types import ASSISTANT, DEVELOPER, ROLES, SYSTEM, TOOL, Message, TextContent

__all__ = [
    "FUNCTIONS_CHANNEL_LINE",
    "render_conversation",
    "render_developer_content",
    "render_message",
    "render_system_content",
    "render_tools_section",
]

#: Added under the channels line when a developer message defines function tools.
FUNCTIONS_CHANNEL_LINE = "Calls to these tools must go to the commentary channel: 'functions'."


def render_conversation(
    conversation: Conversation | Sequence[Message],
    *,
    next_role: str | None = "assistant",
    auto_drop_analysis: bool = True,
) -> str:
    """The whole prompt; ends with ``<|start|>{next_role}`` unless ``next_role`` is None.

    With ``auto_drop_analysis``, once the last assistant message is a ``final`` answer, the
    ``analysis`` messages before the first ``final`` message are left out: the model does not
    need the chain-of-thought of finished turns, but a turn still in the middle of tool calls
    keeps its reasoning.
    """
    if not isinstance(conversation, Conversation):
        conversation = Conversation(list(conversation))
    messages = conversation.messages
    has_function_tools = conversation.has_function_tools
    drop_before = 0  # analysis messages before this index are left out
    if auto_drop_analysis and conversation.last_assistant_is_final:
        drop_before = next(i for i, m in enumerate(messages) if m.channel == "final")
    parts = [
        render_message(message, has_function_tools=has_function_tools)
        for index, message in enumerate(messages)
        if not (index < drop_before and message.channel == "analysis")
    ]
    if next_role is not None:
        parts.append(START + next_role)
    return "".join(parts)


def render_message(message: Message, *, has_function_tools: bool = False) -> str:
    """One message, from ``<|start|>`` to its terminator.

    ``has_function_tools`` adds the 'functions' line to a system message's channels section;
    :func:`render_conversation` works it out from the developer messages.
    """
    if message.role not in ROLES:
        raise HarmonyError(f"unknown role {message.role!r} (expected {', '.join(ROLES)})")
    header = [START, _author(message)]
    if message.recipient is not None and message.recipient != "all":
        header.append(f" to={message.recipient}")
    if message.channel is not None:
        header.append(CHANNEL + message.channel)
    if message.content_type is not None:
        header.append(f" {message.content_type}")
    header.append(MESSAGE)
    body = "".join(_render_content(c, message.role, has_function_tools) for c in message.content)
    is_call = message.role == ASSISTANT and message.recipient not in (None, "all")
    return "".join(header) + body + (CALL if is_call else END)


def _author(message: Message) -> str:
    """A tool's message is written as the tool's name; others as the role (``role:name``)."""
    if message.role == TOOL:
        if not message.name:
            raise HarmonyError("a tool message needs the tool's name (e.g. 'python')")
        return message.name
    return message.role if message.name is None else f"{message.role}:{message.name}"


def _render_content(content: object, role: str, has_function_tools: bool) -> str:
    if isinstance(content, TextContent):
        return content.text
    if isinstance(content, SystemContent):
        if role != SYSTEM:
            raise HarmonyError(f"system content may only appear in a system message, not {role}")
        return render_system_content(content, has_function_tools=has_function_tools)
    if isinstance(content, DeveloperContent):
        if role != DEVELOPER:
            raise HarmonyError(
                f"developer content may only appear in a developer message, not {role}"
            )
        return render_developer_content(content)
    raise HarmonyError(f"cannot render message content of type {type(content).__name__}")


def render_system_content(content: SystemContent, *, has_function_tools: bool = False) -> str:
    """Identity and dates; reasoning effort; built-in tools; the channels line."""
    sections: list[str] = []
    top = []
    if content.model_identity is not None:
        top.append(content.model_identity)
    if content.knowledge_cutoff is not None:
        top.append(f"Knowledge cutoff: {content.knowledge_cutoff}")
    if content.conversation_start_date is not None:
        top.append(f"Current date: {content.conversation_start_date}")
    if top:
        sections.append("\n".join(top))
    if content.reasoning_effort is not None:
        sections.append(f"Reasoning: {content.reasoning_effort.value}")
    if content.tools:
        sections.append(render_tools_section(content.tools))
    config = content.channel_config
    if config is not None and config.valid_channels:
        line = f"# Valid channels: {', '.join(config.valid_channels)}."
        if config.channel_required:
            line += " Channel must be included for every message."
        if has_function_tools:
            line += "\n" + FUNCTIONS_CHANNEL_LINE
        sections.append(line)
    return "\n\n".join(sections)


def render_developer_content(content: DeveloperContent) -> str:
    """``# Instructions``; the ``# Tools`` section; ``# Response Formats``."""
    sections: list[str] = []
    if content.instructions is not None:
        sections += ["# Instructions", content.instructions]
    if content.tools:
        sections.append(render_tools_section(content.tools))
    if content.response_formats:
        sections.append(_response_formats_section(content.response_formats))
    return "\n\n".join(sections)


def render_tools_section(namespaces: Mapping[str, ToolNamespaceConfig]) -> str:
    """``# Tools`` and one ``## name`` section per namespace, in key order (as Harmony sorts)."""
    sections = ["# Tools"]
    for key in sorted(namespaces):
        sections.append(_namespace(namespaces[key]))
    return "\n\n".join(sections)


def _namespace(ns: ToolNamespaceConfig) -> str:
    lines = [f"## {ns.name}\n"]
    description = split_lines(ns.description or "")
    # With tools the description is a comment above the namespace; without (python) it is prose.
    lines += [f"// {line}" for line in description] if ns.tools else description
    if ns.tools:
        lines.append(f"namespace {ns.name} {{\n")
        for tool in ns.tools:
            lines += [f"// {line}" for line in split_lines(tool.description)]
            if tool.parameters is None:
                lines.append(f"type {tool.name} = () => any;\n")
            else:
                signature = schema_to_typescript(tool.parameters)
                lines.append(f"type {tool.name} = (_: {signature}) => any;\n")
        lines.append(f"}} // namespace {ns.name}")
    return "\n".join(lines)


def _response_formats_section(formats: Iterable[ResponseFormat]) -> str:
    """As the Harmony guide shows: ``## name``, an optional ``// description``, compact JSON."""
    sections = ["# Response Formats"]
    for fmt in formats:
        comment = "".join(f"// {line}\n" for line in split_lines(fmt.description or ""))
        try:
            schema = json.dumps(fmt.schema, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise HarmonyError(f"response format {fmt.name!r}: schema is not JSON: {exc}") from exc
        sections.append(f"## {fmt.name}\n\n{comment}{schema}")
    return "\n\n".join(sections)
