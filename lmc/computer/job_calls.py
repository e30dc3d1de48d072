"""The calls on jobs, as the model makes them: through lmc's ``jobs`` function
(:mod:`lmc.agent.job_tool`) or the ``jobs`` tool of ``lmc mcp serve``.

:func:`job_arguments` checks a call's JSON arguments (a ``ValueError`` whose text is what the
caller is told); :func:`answer_job_call` does it and says what happened, in words.
"""

from __future__ import annotations

import json
from typing import Any, Final

from lmc.computer.jobs import Job, JobTable, describe

__all__ = ["JOBS_DESCRIPTION", "JOBS_PARAMETERS", "MAX_WAIT", "answer_job_call", "job_arguments"]

#: Seconds a poll may wait for its job to end.
MAX_WAIT: Final = 300.0

JOBS_DESCRIPTION: Final = (
    "Code still running after its time limit goes on as a background job with a number. "
    'List them ({"action": "list"}), read a job\'s new output and whether it is still '
    'running ({"action": "poll", "job": N}, optionally "wait": seconds to wait for it to '
    'end first), or stop it ({"action": "stop", "job": N}). Jobs get no keyboard input.'
)
JOBS_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "poll", "stop"]},
        "job": {"type": "integer", "description": "The job's number."},
        "wait": {"type": "number", "description": "poll: seconds to wait for the job to end."},
    },
    "required": ["action"],
}


def job_arguments(text: str) -> dict[str, Any]:
    """The checked arguments of a call (``{"action", "job", "wait"}``)."""
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


def answer_job_call(table: JobTable | None, arguments: dict[str, Any]) -> str:
    """What the model is told for one call (its arguments already checked)."""
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
