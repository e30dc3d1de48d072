"""The calls on jobs (list, poll, write, eof, stop), as the model makes them: through lmc's
``jobs`` function (:mod:`lmc.agent.job_tool`) or the ``jobs`` tool of ``lmc mcp serve``.

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
    'end first), write a line to its input ({"action": "write", "job": N, "text": "yes"}; '
    '"newline": false sends the text as it is), end its input ({"action": "eof", "job": N}), '
    'or stop it ({"action": "stop", "job": N}). Only shell jobs take input.'
)
ACTIONS: Final = ("list", "poll", "write", "eof", "stop")
JOBS_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "job": {"type": "integer", "description": "The job's number."},
        "text": {"type": "string", "description": "write: the text for the job's input."},
        "newline": {
            "type": "boolean",
            "description": "write: end the text with a newline (the default: true).",
        },
        "wait": {
            "type": "number",
            "description": "poll, write, eof: seconds to wait for the job to end first.",
        },
    },
    "required": ["action"],
}


def job_arguments(text: str) -> dict[str, Any]:
    """The checked arguments of a call (``{"action", "job", "wait"}``, and ``"text"`` for a
    write, its newline added)."""
    try:
        data = json.loads(text.strip() or "{}")
    except ValueError:
        raise ValueError("jobs: the arguments are not valid JSON") from None
    if not isinstance(data, dict):
        raise ValueError("jobs: the arguments must be a JSON object")
    action = data.get("action", "list" if "job" not in data else "poll")
    if action not in ACTIONS:
        raise ValueError('jobs: "action" must be "list", "poll", "write", "eof" or "stop"')
    checked: dict[str, Any] = {"action": action}
    if action == "write":
        checked["text"] = _text(data)
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


def _text(data: dict[str, Any]) -> str:
    """What a write sends: its text, with a newline unless ``"newline": false``."""
    text, newline = data.get("text"), data.get("newline", True)
    if not isinstance(text, str):
        raise ValueError('jobs: write needs "text", the text for the job\'s input')
    if not isinstance(newline, bool):
        raise ValueError('jobs: "newline" must be true or false')
    return text + "\n" if newline else text


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
    if arguments["action"] in ("write", "eof"):
        said = job.send_input(arguments.get("text") if arguments["action"] == "write" else None)
        if arguments["wait"]:
            job.wait(arguments["wait"])
        return _report(job, f"{said}; it is {_state(job)}.")
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
