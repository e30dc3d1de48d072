"""The ``jobs`` function: the model lists, polls and stops the blocks handed back as jobs.

A block that runs past ``block_timeout`` goes on as a job of the computer
(:mod:`lmc.computer.jobs`); the note the model gets names this tool. It is one more provider
behind the loop's ``ExternalTools`` interface (as MCP servers' tools and the browser are), so
a call streams as a ``tool_call`` chunk of format ``lmc.jobs`` and is confirmed like code unless
``-y`` or an approval rule allows it.

Actions: ``list``; ``poll`` (the job's output since the last poll and its state; with
``wait``, up to that many seconds for it to end first); ``stop`` (an interrupt, then its
kernel is freed for good). A job's stdin is closed (end of input), as a block's is: there is
nothing to write to.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from lmc.computer.jobs import Job, JobTable, describe
from lmc.harmony.conversation import ToolDescription
from lmc.messages import Chunk, console_output

__all__ = ["JOBS_FUNCTION", "MAX_WAIT", "JobTools"]

JOBS_FUNCTION: Final = "jobs"
#: Seconds a poll may wait for its job to end.
MAX_WAIT: Final = 300.0

_DESCRIPTION: Final = (
    "Code still running after its time limit goes on as a background job with a number. "
    'List them ({"action": "list"}), read a job\'s new output and whether it is still '
    'running ({"action": "poll", "job": N}, optionally "wait": seconds to wait for it to '
    'end first), or stop it ({"action": "stop", "job": N}). Jobs get no keyboard input.'
)
_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "poll", "stop"]},
        "job": {"type": "integer", "description": "The job's number."},
        "wait": {"type": "number", "description": "poll: seconds to wait for the job to end."},
    },
    "required": ["action"],
}


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
        return [ToolDescription(JOBS_FUNCTION, _DESCRIPTION, dict(_PARAMETERS))]

    def notices(self) -> list[str]:
        return []

    def find(self, function: str) -> JobsCall | None:
        return self._call if function == JOBS_FUNCTION else None

    def arguments(self, tool: JobsCall, text: str) -> dict[str, Any]:
        try:
            data = json.loads(text.strip() or "{}")
        except ValueError:
            raise ValueError("jobs: the arguments are not valid JSON") from None
        if not isinstance(data, dict):
            raise ValueError("jobs: the arguments must be a JSON object")
        action = data.get("action", "list" if "job" not in data else "poll")
        if action not in ("list", "poll", "stop"):
            raise ValueError('jobs: "action" must be "list", "poll" or "stop"')
        checked: dict[str, Any] = {"action": action}
        job, wait = data.get("job"), data.get("wait", 0)
        if action != "list":
            if isinstance(job, float) and job.is_integer():
                job = int(job)
            if isinstance(job, str) and job.strip().isdigit():
                job = int(job)
            if not isinstance(job, int) or isinstance(job, bool):
                raise ValueError(f'jobs: {action} needs "job", the job\'s number')
            checked["job"] = job
        if not isinstance(wait, int | float) or isinstance(wait, bool) or wait < 0:
            raise ValueError('jobs: "wait" must be a number of seconds')
        checked["wait"] = min(float(wait), MAX_WAIT)
        return checked

    def call(self, tool: JobsCall, arguments: dict[str, Any]) -> list[Chunk]:
        return [console_output(self.answer(arguments))]

    def answer(self, arguments: dict[str, Any]) -> str:
        """What the model is told for one call (its arguments already checked)."""
        table = self._jobs()
        jobs = [] if table is None else table.list()
        if arguments["action"] == "list":
            if not jobs:
                return "There are no jobs.\n"
            return "".join(describe(job) + "\n" for job in jobs)
        job = None if table is None else table.get(arguments["job"])
        if job is None:
            known = ", ".join(str(j.id) for j in jobs) or "none"
            return f"There is no job {arguments['job']} (jobs: {known}).\n"
        if arguments["action"] == "stop":
            said = job.stop()
            return _report(job, f"{said}.")
        if arguments["wait"]:
            job.wait(arguments["wait"])
        return _report(job, f"job {job.id} is {_state(job)}.")

    def cancel(self) -> None:
        """A poll waits at most its ``wait``; Ctrl-C ends that wait in the main thread."""


def _state(job: Job) -> str:
    if job.running:
        return f"still running after {job.age:.0f} s"
    return job.state


def _report(job: Job, head: str) -> str:
    polled = job.poll()
    dropped = ""
    if polled.dropped:
        dropped = f"({polled.dropped} characters of older output were dropped)\n"
    output = polled.output or "(no new output)\n"
    if not output.endswith("\n"):
        output += "\n"
    return f"{head} Output since the last poll:\n{dropped}{output}"
