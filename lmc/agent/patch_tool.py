"""gpt-oss's ``apply_patch`` tool, declared and answered as OpenAI's reference does.

The reference (gpt-oss's ``gpt_oss/chat.py -a``) puts the whole of ``apply_patch.md`` in the
developer message's instructions and declares ``functions.apply_patch`` with the description
``Patch a file`` and a string parameter, which Harmony renders as
``type apply_patch = (_: string) => any;``: the call's body is the raw patch. A body that is a
JSON object with a string field (``{"patch": ...}``, ``{"input": ...}``) is accepted too, as
the reference accepts it; servers that template the conversation themselves are given the tool
with Codex's object schema ``{"input": string}`` (see :func:`lmc.agent.tools.function_specs`).

It is one more provider of :class:`lmc.agent.tool_calls.ExternalTools`, so a patch goes the
way an MCP call goes: a ``tool_call`` chunk (format ``apply_patch``, the patch as content),
the person's confirmation (``a`` approves later patches), a checkpoint around it (the files
chunk, ``%diff``, ``%undo``), then the answer: ``Done!``, or ``Error applying patch: ...``
naming the file and the hunk that did not match. The patch is applied in lmc's process by
:mod:`lmc.workspace.patch`, all or nothing, only inside the working directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from lmc.errors import LmcError
from lmc.harmony.conversation import ToolDescription
from lmc.messages import Chunk, console_output

__all__ = [
    "DONE",
    "FAILED",
    "PATCH_FORMAT",
    "PATCH_PARAMETERS",
    "PatchTool",
    "apply_patch_instructions",
    "patch_from_call",
]

#: The format of the tool_call chunks of a patch (and of the rule ``a`` adds).
PATCH_FORMAT: Final = "apply_patch"
#: What the model is told when the patch applied, and how a failure begins (the reference's).
DONE: Final = "Done!"
FAILED: Final = "Error applying patch"
#: The reference's parameter, byte for byte (a string: the patch itself).
PATCH_PARAMETERS: Final = {
    "type": "string",
    "description": "Formatted patch code",
    "default": "*** Begin Patch\n*** End Patch\n",
}
_FIELDS: Final = ("input", "patch")


@cache
def apply_patch_instructions() -> str:
    """gpt-oss's apply_patch.md, unchanged (shipped beside this module; see apply_patch.NOTICE)."""
    return Path(__file__).with_name("apply_patch.md").read_text(encoding="utf-8")


def patch_from_call(text: str) -> str:
    """The patch a call carries: the text itself, a JSON string (the declared type, written as
    JSON), or the string field of a JSON object (``input``, ``patch``, else its only string);
    ValueError (what the model is told) else."""
    stripped = text.strip()
    if stripped.startswith('"'):
        try:
            value = json.loads(stripped)
        except ValueError:
            return text
        return value if isinstance(value, str) else text
    if not stripped.startswith("{"):
        return text
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"Error parsing JSON: {exc}") from None
    if isinstance(data, dict):
        for name in _FIELDS:
            if isinstance(data.get(name), str):
                return str(data[name])
        strings = [value for value in data.values() if isinstance(value, str)]
        if len(strings) == 1:
            return strings[0]
    raise ValueError(
        'Error parsing JSON: send the patch itself, or a JSON object like {"input": "*** Begin '
        'Patch\\n...\\n*** End Patch"}'
    )


@dataclass(frozen=True, slots=True)
class _Tool:
    function: str = PATCH_FORMAT
    format: str = PATCH_FORMAT
    auto_approve: bool = False


class PatchTool:
    """The apply_patch tool over the working directory ``root()`` gives at each call."""

    def __init__(self, root: Callable[[], Path], hide: Sequence[str] | None = ()) -> None:
        self.root = root
        self.hide = hide  # what the sandbox hides too (None: the sandbox is off)
        self._tool = _Tool()

    def start(self) -> None:
        return None

    def descriptions(self) -> list[ToolDescription]:
        return [ToolDescription(PATCH_FORMAT, "Patch a file", dict(PATCH_PARAMETERS))]

    def notices(self) -> list[str]:
        return []

    def find(self, function: str) -> _Tool | None:
        return self._tool if function == PATCH_FORMAT else None

    def arguments(self, tool: Any, text: str) -> dict[str, Any]:
        return {"input": patch_from_call(text)}

    def call(self, tool: Any, arguments: dict[str, Any]) -> list[Chunk]:
        try:
            from lmc.workspace.patch import apply_patch  # not before the model patches

            apply_patch(self.root(), str(arguments.get("input", "")), self.hide)
        except (LmcError, OSError) as exc:
            return [console_output(f"{FAILED}: {exc}")]
        return [console_output(DONE)]

    def cancel(self) -> None:
        return None
