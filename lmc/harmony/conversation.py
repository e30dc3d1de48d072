"""Structured Harmony contents (system, developer, tools) and whole conversations.

The JSON shape is openai-harmony's ``Conversation.to_json()``, so its fixtures and outside
tools are read as they are. Reading is strict (:mod:`lmc.harmony.strict_json`): anything
malformed raises :class:`~lmc.errors.HarmonyError` with one line that says where
(``messages[2].content[0]``) and what is wrong; nothing else escapes. Unknown keys are
ignored, as openai-harmony does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from lmc.errors import HarmonyError
from lmc.harmony.strict_json import (
    REQUIRED,
    as_object,
    optional_text,
    required,
    shown,
    str_list,
    text_of,
    typed,
)
from lmc.harmony.types import ASSISTANT, DEVELOPER, ROLES, SYSTEM, TOOL, Message, TextContent

__all__ = [
    "DEFAULT_IDENTITY",
    "DEFAULT_KNOWLEDGE_CUTOFF",
    "DEFAULT_PYTHON_DESCRIPTION",
    "ChannelConfig",
    "Conversation",
    "DeveloperContent",
    "ReasoningEffort",
    "ResponseFormat",
    "SystemContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "browser_tool_namespace",
    "message_from_json",
    "python_tool_namespace",
]

DEFAULT_IDENTITY: Final = "You are ChatGPT, a large language model trained by OpenAI."
DEFAULT_KNOWLEDGE_CUTOFF: Final = "2024-06"
DEFAULT_CHANNELS: Final = ("analysis", "commentary", "final")


class ReasoningEffort(StrEnum):
    """How long the model thinks; written as ``Reasoning: low|medium|high``."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @classmethod
    def parse(cls, value: object, where: str = "reasoning_effort") -> ReasoningEffort:
        """Any letter case (openai-harmony writes ``"Medium"``)."""
        if isinstance(value, str):
            try:
                return cls(value.lower())
            except ValueError:
                pass
        raise HarmonyError(f"{where}: expected one of low, medium, high, got {shown(value)}")


@dataclass(slots=True)
class ChannelConfig:
    """The channels the model may write to, and whether every message must name one."""

    valid_channels: list[str] = field(default_factory=lambda: list(DEFAULT_CHANNELS))
    channel_required: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "valid_channels": list(self.valid_channels),
            "channel_required": self.channel_required,
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "channel_config") -> ChannelConfig:
        obj = as_object(data, where)
        return cls(
            valid_channels=str_list(
                required(obj, "valid_channels", where), f"{where}.valid_channels"
            ),
            channel_required=typed(obj, "channel_required", where, bool, "a boolean", default=True),
        )


@dataclass(slots=True)
class ToolDescription:
    """One tool: its name, what it does, and its parameters as a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            out["parameters"] = self.parameters
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "tool") -> ToolDescription:
        obj = as_object(data, where)
        parameters = typed(obj, "parameters", where, dict, "a JSON Schema object", default=None)
        return cls(
            name=text_of(obj, "name", where),
            description=typed(obj, "description", where, str, "a string", default=""),
            parameters=parameters,
        )


@dataclass(slots=True)
class ToolNamespaceConfig:
    """A ``## name`` section: a namespace description and its tools (none for ``python``)."""

    name: str
    description: str | None = None
    tools: list[ToolDescription] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "tools": [tool.to_json() for tool in self.tools],
        }

    @classmethod
    def from_json(
        cls, data: Any, where: str = "namespace", default_name: str | None = None
    ) -> ToolNamespaceConfig:
        obj = as_object(data, where)
        if default_name is not None and "name" not in obj:
            name = default_name
        else:
            name = text_of(obj, "name", where)
        tools = typed(obj, "tools", where, list, "a list", default=None) or []
        return cls(
            name=name,
            description=optional_text(obj, "description", where, None),
            tools=[
                ToolDescription.from_json(t, f"{where}.tools[{i}]") for i, t in enumerate(tools)
            ],
        )


@dataclass(slots=True)
class ResponseFormat:
    """A structured-output format for the developer message's ``# Response Formats``."""

    name: str
    schema: dict[str, Any]
    description: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["schema"] = self.schema
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "response_format") -> ResponseFormat:
        obj = as_object(data, where)
        schema = typed(obj, "schema", where, dict, "a JSON Schema object", default=REQUIRED)
        return cls(
            name=text_of(obj, "name", where),
            schema=schema,
            description=optional_text(obj, "description", where, None),
        )


def _namespaces_to_json(tools: dict[str, ToolNamespaceConfig]) -> dict[str, Any]:
    return {key: ns.to_json() for key, ns in tools.items()}


def _namespaces_from_json(
    obj: Mapping[str, Any], where: str
) -> dict[str, ToolNamespaceConfig] | None:
    raw = typed(obj, "tools", where, dict, "an object of namespaces", default=None)
    if raw is None:
        return None
    return {
        key: ToolNamespaceConfig.from_json(ns, f"{where}.tools.{key}", default_name=key)
        for key, ns in raw.items()
    }


@dataclass(slots=True)
class SystemContent:
    """What the system message says: identity, dates, reasoning effort, built-in tools, channels."""

    model_identity: str | None = DEFAULT_IDENTITY
    reasoning_effort: ReasoningEffort | None = ReasoningEffort.MEDIUM
    conversation_start_date: str | None = None
    knowledge_cutoff: str | None = DEFAULT_KNOWLEDGE_CUTOFF
    channel_config: ChannelConfig | None = field(default_factory=ChannelConfig)
    tools: dict[str, ToolNamespaceConfig] | None = None

    def to_json(self) -> dict[str, Any]:
        """openai-harmony's shape; a field cleared from a non-null default is written as null."""
        out: dict[str, Any] = {
            "model_identity": self.model_identity,
            # openai-harmony's enum values are capitalised; it reads no other case.
            "reasoning_effort": (
                self.reasoning_effort.value.capitalize() if self.reasoning_effort else None
            ),
        }
        if self.conversation_start_date is not None:
            out["conversation_start_date"] = self.conversation_start_date
        out["knowledge_cutoff"] = self.knowledge_cutoff
        out["channel_config"] = self.channel_config.to_json() if self.channel_config else None
        if self.tools is not None:
            out["tools"] = _namespaces_to_json(self.tools)
        out["type"] = "system_content"
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "system_content") -> SystemContent:
        obj = as_object(data, where)
        effort = obj.get("reasoning_effort", ReasoningEffort.MEDIUM)
        config = obj.get("channel_config", REQUIRED)
        return cls(
            model_identity=optional_text(obj, "model_identity", where, DEFAULT_IDENTITY),
            reasoning_effort=(
                None
                if effort is None
                else ReasoningEffort.parse(effort, f"{where}.reasoning_effort")
            ),
            conversation_start_date=optional_text(obj, "conversation_start_date", where, None),
            knowledge_cutoff=optional_text(
                obj, "knowledge_cutoff", where, DEFAULT_KNOWLEDGE_CUTOFF
            ),
            channel_config=_channel_config(config, f"{where}.channel_config"),
            tools=_namespaces_from_json(obj, where),
        )


def _channel_config(data: Any, where: str) -> ChannelConfig | None:
    """Absent: the default channels; null: no channels line at all."""
    if data is REQUIRED:
        return ChannelConfig()
    return None if data is None else ChannelConfig.from_json(data, where)


@dataclass(slots=True)
class DeveloperContent:
    """What the developer message says: instructions, function tools, response formats."""

    instructions: str | None = None
    tools: dict[str, ToolNamespaceConfig] | None = None
    response_formats: list[ResponseFormat] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        if self.tools is not None:
            out["tools"] = _namespaces_to_json(self.tools)
        if self.response_formats is not None:
            out["response_formats"] = [f.to_json() for f in self.response_formats]
        out["type"] = "developer_content"
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "developer_content") -> DeveloperContent:
        obj = as_object(data, where)
        formats = typed(obj, "response_formats", where, list, "a list", default=None)
        return cls(
            instructions=optional_text(obj, "instructions", where, None),
            tools=_namespaces_from_json(obj, where),
            response_formats=(
                None
                if formats is None
                else [
                    ResponseFormat.from_json(f, f"{where}.response_formats[{i}]")
                    for i, f in enumerate(formats)
                ]
            ),
        )

    @property
    def has_function_tools(self) -> bool:
        """Whether it defines at least one tool in the ``functions`` namespace."""
        return bool(self.tools and "functions" in self.tools and self.tools["functions"].tools)


def message_from_json(data: Any, where: str = "message") -> Message:
    """One message in openai-harmony's JSON shape; a plain string ``content`` means one text."""
    obj = as_object(data, where)
    role = text_of(obj, "role", where)
    if role not in ROLES:
        raise HarmonyError(f"{where}.role: unknown role {role!r} (expected {', '.join(ROLES)})")
    name = optional_text(obj, "name", where, None)
    if role == TOOL and not name:
        raise HarmonyError(f"{where}: a tool message needs the tool's name in 'name'")
    raw = required(obj, "content", where)
    if isinstance(raw, str):
        raw = [{"type": "text", "text": raw}]
    if not isinstance(raw, list):
        raise HarmonyError(f"{where}.content: expected a list, got {shown(raw)}")
    content = [
        _content_from_json(item, role, f"{where}.content[{i}]") for i, item in enumerate(raw)
    ]
    return Message(
        role=role,
        content=content,
        name=name,
        channel=optional_text(obj, "channel", where, None),
        recipient=optional_text(obj, "recipient", where, None),
        content_type=optional_text(obj, "content_type", where, None),
    )


def _content_from_json(data: Any, role: str, where: str) -> Any:
    obj = as_object(data, where)
    kind = text_of(obj, "type", where)
    if kind == "text":
        return TextContent(typed(obj, "text", where, str, "a string", default=REQUIRED))
    if kind == "system_content":
        if role != SYSTEM:
            raise HarmonyError(f"{where}: system_content may only appear in a system message")
        return SystemContent.from_json(obj, where)
    if kind == "developer_content":
        if role != DEVELOPER:
            raise HarmonyError(f"{where}: developer_content may only appear in a developer message")
        return DeveloperContent.from_json(obj, where)
    raise HarmonyError(
        f"{where}.type: unknown content type {kind!r} "
        "(expected text, system_content or developer_content)"
    )


@dataclass(slots=True)
class Conversation:
    """An ordered list of Harmony messages."""

    messages: list[Message] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"messages": [m.to_json() for m in self.messages]}

    @classmethod
    def from_json(cls, data: Any) -> Conversation:
        """Read ``{"messages": [...]}``; raises :class:`HarmonyError` on anything malformed."""
        if not isinstance(data, dict):
            raise HarmonyError(
                f"a conversation must be a JSON object with a 'messages' list, got {shown(data)}"
            )
        messages = typed(data, "messages", "conversation", list, "a list", default=REQUIRED)
        return cls([message_from_json(m, f"messages[{i}]") for i, m in enumerate(messages)])

    @property
    def has_function_tools(self) -> bool:
        """Whether any developer message defines function tools (the system message says so)."""
        return any(
            isinstance(c, DeveloperContent) and c.has_function_tools
            for m in self.messages
            for c in m.content
        )

    @property
    def last_assistant_is_final(self) -> bool:
        for message in reversed(self.messages):
            if message.role == ASSISTANT:
                return message.channel == "final"
        return False


# --- the built-in namespaces gpt-oss was trained with ----------------------------------------

DEFAULT_PYTHON_DESCRIPTION: Final = (
    "Use this tool to execute Python code in your chain of thought. The code will not be shown "
    "to the user. This tool should be used for internal reasoning, but not for code that is "
    "intended to be visible to the user (e.g. when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a "
    "stateful Jupyter notebook environment. python will respond with the output of the "
    "execution or time out after 120.0 seconds. The drive at '/mnt/data' can be used to save "
    "and persist user files. Internet access for this session is UNKNOWN. Depends on the "
    "cluster."
)

_BROWSER_DESCRIPTION: Final = (
    "Tool for browsing.\n"
    "The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
    "Cite information from the tool using the following format:\n"
    "`【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\n"
    "Do not quote more than 10 words directly from the tool output.\n"
    "sources=web (default: web)"
)


def python_tool_namespace(description: str | None = None) -> ToolNamespaceConfig:
    """The ``python`` namespace: a description and no tools (the model writes code to it)."""
    return ToolNamespaceConfig("python", description or DEFAULT_PYTHON_DESCRIPTION, [])


def browser_tool_namespace() -> ToolNamespaceConfig:
    """The ``browser`` namespace with its ``search``, ``open`` and ``find`` tools."""
    number_default: dict[str, Any] = {"type": "number", "default": -1}
    return ToolNamespaceConfig(
        "browser",
        _BROWSER_DESCRIPTION,
        [
            ToolDescription(
                "search",
                "Searches for information related to `query` and displays `topn` results.",
                {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "topn": {"type": "number", "default": 10},
                        "source": {"type": "string"},
                    },
                    "required": ["query"],
                },
            ),
            ToolDescription(
                "open",
                "Opens the link `id` from the page indicated by `cursor` starting at line number "
                "`loc`, showing `num_lines` lines.\n"
                "Valid link ids are displayed with the formatting: `【{id}†.*】`.\n"
                "If `cursor` is not provided, the most recent page is implied.\n"
                "If `id` is a string, it is treated as a fully qualified URL associated with "
                "`source`.\n"
                "If `loc` is not provided, the viewport will be positioned at the beginning of the "
                "document or centered on the most relevant passage, if available.\n"
                "Use this function without `id` to scroll to a new location of an opened page.",
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": ["number", "string"], "default": -1},
                        "cursor": dict(number_default),
                        "loc": dict(number_default),
                        "num_lines": dict(number_default),
                        "view_source": {"type": "boolean", "default": False},
                        "source": {"type": "string"},
                    },
                },
            ),
            ToolDescription(
                "find",
                "Finds exact matches of `pattern` in the current page, or the page given by "
                "`cursor`.",
                {
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string"},
                        "cursor": dict(number_default),
                    },
                    "required": ["pattern"],
                },
            ),
        ],
    )
