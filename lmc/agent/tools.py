"""The model's tools and the two messages that open every prompt.

The system message names the built-in ``python`` tool gpt-oss was trained on (a stateful
Jupyter kernel, raw code in the message), described as it really is here: the code runs on the
person's computer, they see it and its output, and they may decline. Other languages are
function tools whose one argument is the code (``{"code": "..."}``). The developer message
tells the model where it runs.

:func:`resolve_call` maps what a model writes as a recipient (including the aliases real
models produce) to a language, and :func:`code_from_call` takes the code out of the call by
the same rule the person's view uses, so what is shown is what runs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Final

from lmc.backends._dialogue import CODE_SCHEMA
from lmc.backends.base import FunctionSpec
from lmc.harmony.conversation import (
    DeveloperContent,
    ReasoningEffort,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
    browser_tool_namespace,
    python_tool_namespace,
)
from lmc.harmony.json_string import CODE_FIELDS
from lmc.harmony.to_lmc import TOOL_SEPARATOR, call_code, tool_language
from lmc.harmony.types import Message as HarmonyMessage
from lmc.messages import CODE_FORMATS, CodeFormat

__all__ = [
    "DECLINED",
    "FUNCTION_LANGUAGES",
    "ToolCallError",
    "ToolTarget",
    "argument_schemas",
    "code_from_call",
    "developer_message",
    "function_languages",
    "function_specs",
    "resolve_call",
    "system_message",
    "tool_names",
]

#: What the model is told when the person declines to run its code.
DECLINED: Final = "The user declined to run this code."

#: Languages reached through function tools (python is the built-in tool).
FUNCTION_LANGUAGES: Final = tuple(lang for lang in CODE_FORMATS if lang != "python")

PYTHON_DESCRIPTION: Final = (
    "Use this tool to execute Python code on the user's computer. The user sees the code and "
    "its output, and may decline to run it. Use it to compute, inspect files, make plots and "
    "do the work the user asks for.\n\n"
    "When you send a message containing Python code to python, it will be executed in a "
    "stateful Jupyter kernel on the user's machine, in the working directory given by the "
    "developer. python will respond with the output of the execution; very long output is "
    "shortened to its beginning and end. A long run may be handed back to you as a "
    "background job (its note says how to poll or stop it), and the user may interrupt "
    "a long run. Files are read and written on the user's own disk. Internet access depends "
    "on the user's machine."
)

_FUNCTION_DESCRIPTIONS: Final = {
    "shell": (
        "Run a bash script on the user's computer, in a persistent shell: the working "
        "directory and exported variables carry over between calls. Returns its output."
    ),
    "javascript": (
        "Run JavaScript in a persistent Node.js session (top-level await works; let/const "
        "persist between calls). Returns its output."
    ),
    "r": "Run R code in a persistent R session. Returns its output.",
    "applescript": "Run AppleScript with osascript on the user's Mac. Returns its output.",
    "html": (
        "Show an HTML document to the user: their terminal saves it to a file and, when they "
        "are at it, opens it in their browser. Returns a note that it was shown."
    ),
}

_CODE_PARAMETERS: Final = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The code to run."}},
    "required": ["code"],
}


def function_languages() -> tuple[str, ...]:
    """The function-tool languages offered on this system (AppleScript only on macOS)."""
    return tuple(
        lang for lang in FUNCTION_LANGUAGES if lang != "applescript" or sys.platform == "darwin"
    )


def tool_names() -> list[str]:
    """The recipients the model may call, as it should write them."""
    return ["python", *(f"functions.{lang}" for lang in function_languages())]


def system_message(
    reasoning: str | ReasoningEffort, today: date | None = None, *, browser: bool = False
) -> HarmonyMessage:
    """Today's date, the reasoning effort and the built-in tools: python, and with ``browser``
    gpt-oss's browser, declared before python exactly as OpenAI's reference renders them."""
    tools = {"browser": browser_tool_namespace()} if browser else {}
    tools["python"] = python_tool_namespace(PYTHON_DESCRIPTION)
    content = SystemContent(
        reasoning_effort=ReasoningEffort.parse(reasoning),
        conversation_start_date=(today or date.today()).isoformat(),
        tools=tools,
    )
    return HarmonyMessage("system", [content])


def argument_schemas(messages: Iterable[HarmonyMessage]) -> dict[str, dict[str, Any]]:
    """The JSON Schema of every function tool's arguments the prompt's messages define, by
    recipient (``functions.shell``): the in-process model samples call arguments under a
    grammar made from them. Any tool with parameters counts, whoever added it."""
    schemas: dict[str, dict[str, Any]] = {}
    for message in messages:
        for content in message.content:
            tools = getattr(content, "tools", None)
            if not isinstance(content, DeveloperContent | SystemContent) or not tools:
                continue
            for namespace in tools.values():
                for tool in namespace.tools:
                    if tool.parameters is not None:
                        schemas[f"{namespace.name}.{tool.name}"] = tool.parameters
    return schemas


def function_specs(messages: Iterable[HarmonyMessage]) -> list[FunctionSpec]:
    """Every tool the prompt's messages define, as JSON-Schema functions for servers that
    template the conversation themselves: the built-in python tool as ``python`` taking its
    code in ``code``, each ``functions.X`` as ``X``, a built-in namespace's tool
    (``browser.search``) as ``browser_search``."""
    specs: list[FunctionSpec] = []
    for message in messages:
        for content in message.content:
            tools = getattr(content, "tools", None)
            if not isinstance(content, DeveloperContent | SystemContent) or not tools:
                continue
            for namespace in tools.values():
                if namespace.name == "python" and not namespace.tools:  # the built-in tool
                    description = namespace.description or namespace.name
                    specs.append(FunctionSpec(namespace.name, description, CODE_SCHEMA))
                for tool in namespace.tools:
                    parameters = _object_schema(tool.parameters)
                    if namespace.name == "functions":
                        specs.append(FunctionSpec(tool.name, tool.description, parameters))
                        continue
                    # A built-in namespace's tool (browser.search): browser_search.
                    recipient = f"{namespace.name}.{tool.name}"
                    name = recipient.replace(".", "_")
                    specs.append(FunctionSpec(name, tool.description, parameters, recipient))
    return specs


#: How a tool whose one argument is not an object (apply_patch's string) is offered to servers
#: whose function tools take objects: as Codex declares apply_patch, ``{"input": ...}``.
INPUT_FIELD: Final = "input"


def _object_schema(parameters: dict[str, Any] | None) -> dict[str, Any]:
    if parameters is None:
        return {"type": "object", "properties": {}}
    if parameters.get("type", "object") == "object":
        return parameters
    inner = {k: v for k, v in parameters.items() if k != "default"}
    return {"type": "object", "properties": {INPUT_FIELD: inner}, "required": [INPUT_FIELD]}


def _where() -> str:
    """The system, its release and the machine (os.uname's: importing platform is ~1 ms)."""
    if not hasattr(os, "uname"):  # Windows
        import platform

        return " ".join(p for p in (platform.system(), platform.release(), platform.machine()) if p)
    uname = os.uname()
    return " ".join(
        part for part in (uname.sysname or sys.platform, uname.release, uname.machine) if part
    )


def developer_message(
    instructions: str | None = None,
    cwd: str | None = None,
    extra_tools: Sequence[ToolDescription] = (),
    tool_instructions: str = "",
) -> HarmonyMessage:
    """Where the model runs and how to use the tools, plus the person's own instructions.

    ``extra_tools`` (MCP servers' tools, apply_patch) join the language functions in
    ``functions``; ``tool_instructions`` (apply_patch.md) follow the instructions after a
    newline, unchanged, as OpenAI's reference appends them.
    """
    languages = function_languages()
    lines = [
        "You run code on the user's own computer to get things done for them.",
        f"- Operating system: {_where()}. Working directory: {cwd or Path.cwd()}.",
        "- Python runs through the python tool (a stateful Jupyter kernel). Other languages "
        "run through the functions below, with the code in the `code` argument: "
        + ", ".join(languages)
        + ".",
        "- The user sees every piece of code you write and its output, and may decline to run "
        "it. When they decline, do not run it again: say what you wanted to do or ask them.",
        "- Work in small steps: run code, read its output, then continue. Finish with an "
        "answer on the final channel.",
    ]
    if any(TOOL_SEPARATOR in tool.name for tool in extra_tools):
        lines.append(
            "- The functions named SERVER__TOOL are tools of the user's MCP servers; the user "
            "sees each call and may decline it."
        )
    text = "\n".join(lines)
    if instructions:
        text += "\n\n" + instructions.strip()
    if tool_instructions:
        text += "\n" + tool_instructions
    tools = [
        ToolDescription(lang, _FUNCTION_DESCRIPTIONS[lang], dict(_CODE_PARAMETERS))
        for lang in languages
    ]
    tools += extra_tools
    content = DeveloperContent(
        instructions=text,
        tools={"functions": ToolNamespaceConfig("functions", None, tools)},
    )
    return HarmonyMessage("developer", [content])


@dataclass(frozen=True, slots=True)
class ToolTarget:
    """Where a call goes and how its result comes back.

    ``language`` is None for a tool that does not exist (the model is told so).
    ``author`` and ``channel`` make the header of the result: ``python`` answers on the
    channel of the call, functions on ``commentary``.
    """

    language: CodeFormat | None
    author: str
    channel: str
    json_arguments: bool


class ToolCallError(Exception):
    """A call the loop cannot run; ``str()`` is what the model and the person are told."""


def normalize_recipient(recipient: str) -> str:
    """The tool name in a recipient, without a trailing content type (``python code``)."""
    words = recipient.split()
    return words[0] if words else ""


def resolve_call(recipient: str, channel: str | None) -> ToolTarget:
    """The target of a call to ``recipient`` written on ``channel``.

    The language comes from :func:`lmc.harmony.to_lmc.tool_language`, the same function that
    decides which code chunks the person sees, so what is shown is what runs.
    """
    name = normalize_recipient(recipient)
    language = tool_language(name)
    if not name.startswith("functions."):
        # python (the built-in tool) answers on the channel of the call.
        return ToolTarget(language, name, channel or "analysis", json_arguments=False)
    return ToolTarget(language, name, "commentary", json_arguments=True)


def code_from_call(target: ToolTarget, text: str, content_type: str | None = None) -> str:
    """The code a call carries; raises :class:`ToolCallError` when it carries none.

    One rule for every call form (``python``, ``functions.python``, ``shell``,
    ``functions.shell``; any content type): the code field of a JSON object
    (``{"code": "..."}``), else the text itself, exactly as
    :func:`lmc.harmony.to_lmc.call_code` shows it. A function tool given broken JSON or an
    object without a code string is an error (python takes it as code: a dict is Python).
    """
    if target.language is None:
        raise ToolCallError(
            f"There is no tool named {target.author!r}. The tools are: {', '.join(tool_names())}."
        )
    stripped = text.strip()
    if target.language != "python" and stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise ToolCallError(
                f"The arguments to {target.author} are not valid JSON ({exc}). "
                'Send a JSON object like {"code": "..."}.'
            ) from None
        if not isinstance(data, dict) or not any(isinstance(data.get(f), str) for f in CODE_FIELDS):
            raise ToolCallError(
                f'The arguments to {target.author} need a "code" string, like {{"code": "..."}}.'
            )
    return call_code(text, content_type, target.language)
