"""The ``jobs`` function: the model lists, polls and stops the blocks handed back as jobs.

A block that runs past ``block_timeout`` goes on as a job of the computer
(:mod:`lmc.computer.jobs`); the note the model gets names this tool. It is one more provider
behind the loop's ``ExternalTools`` interface (as MCP servers' tools and the browser are), so
a call streams as a ``tool_call`` chunk of format ``lmc.jobs`` and is confirmed like code
unless ``-y`` or an approval rule allows it. What a call does is
:mod:`lmc.computer.job_calls`'s (``lmc mcp serve`` offers the same as a tool).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from lmc.computer.job_calls import (
    JOBS_DESCRIPTION,
    JOBS_PARAMETERS,
    answer_job_call,
    job_arguments,
)
from lmc.computer.jobs import JobTable
from lmc.harmony.conversation import ToolDescription
from lmc.messages import Chunk, console_output

__all__ = ["JOBS_FUNCTION", "JobTools"]

JOBS_FUNCTION: Final = "jobs"


@dataclass(frozen=True, slots=True)
class JobsCall:
    """The one function, as the loop's tool path sees it."""

    function: str = JOBS_FUNCTION
    format: str = f"lmc.{JOBS_FUNCTION}"  # a tool call's format is SERVER.TOOL
    auto_approve: bool = False


class JobTools:
    """``functions.jobs`` over the jobs of the computer ``jobs`` returns (None: none yet)."""

    def __init__(self, jobs: Callable[[], JobTable | None]) -> None:
        self._jobs = jobs
        self._call = JobsCall()

    def start(self) -> None:
        """Nothing to start."""

    def descriptions(self) -> list[ToolDescription]:
        return [ToolDescription(JOBS_FUNCTION, JOBS_DESCRIPTION, dict(JOBS_PARAMETERS))]

    def notices(self) -> list[str]:
        return []

    def find(self, function: str) -> JobsCall | None:
        return self._call if function == JOBS_FUNCTION else None

    def arguments(self, tool: JobsCall, text: str) -> dict[str, Any]:
        return job_arguments(text)

    def call(self, tool: JobsCall, arguments: dict[str, Any]) -> list[Chunk]:
        return [console_output(self.answer(arguments))]

    def answer(self, arguments: dict[str, Any]) -> str:
        """What the model is told for one call (its arguments already checked)."""
        return answer_job_call(self._jobs(), arguments)

    def cancel(self) -> None:
        """A poll waits at most its ``wait``; Ctrl-C ends that wait in the main thread."""
