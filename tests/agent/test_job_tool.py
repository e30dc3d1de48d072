"""The model's ``jobs`` function end to end: a dev server started in the foreground is handed
back as a job after ``block_timeout``, the model polls it and stops it, and nothing is left.

The model is the tiny model replaying gpt-oss's calls (real llama.cpp path); the server is a
real ``python -m http.server`` in the real sandbox, found from outside by its command line.
"""

from __future__ import annotations

import json
import secrets
import sys
from typing import Any

import pytest
from support.agent_testing import Replayed
from support.asking import scripted_asker
from support.processes import pids_of, wait_until_gone, wait_until_running

from lmc.agent.job_tool import JobTools
from lmc.agent.tool_calls import TOOL_DECLINED
from lmc.computer import Computer
from lmc.messages import Chunk
from lmc.terminal.confirm import Confirmer


def _shell(code: str) -> str:
    arguments = json.dumps({"code": code})
    head = "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"
    return f"{head}{arguments}<|call|>"


def _jobs(**arguments: Any) -> str:
    text = json.dumps(arguments)
    return f"<|channel|>commentary to=functions.jobs <|constrain|>json<|message|>{text}<|call|>"


def _final(text: str) -> str:
    return f"<|channel|>final<|message|>{text}<|return|>"


@pytest.fixture
def make(replayed: Replayed) -> Replayed:
    return replayed


def _outputs(chunks: list[Chunk]) -> list[str]:
    """The text of each console run, in order."""
    runs: list[str] = []
    for chunk in chunks:
        if chunk.get("type") == "console" and chunk.get("start"):
            runs.append("")
        elif chunk.get("format") == "output":
            runs[-1] += str(chunk.get("content") or "")
    return runs


def test_a_foreground_server_becomes_a_job_the_model_polls_and_stops(make: Any) -> None:
    port = str(20000 + secrets.randbelow(30000))
    server = (sys.executable, "-m", "http.server", port)
    url = f"http://127.0.0.1:{port}/"
    interpreter = make(
        _shell(" ".join(server)),
        _shell(
            f"curl -s --retry 30 --retry-connrefused --retry-delay 1 {url} >/dev/null"
            " && echo reached"
        ),
        _jobs(action="poll", job=1),
        _jobs(action="list"),
        _jobs(action="stop", job=1),
        _jobs(action="poll", job=7),
        _final("The server ran and is stopped."),
        block_timeout=1,
    )
    chunks = list(interpreter.chat("start a dev server", stream=True, display=False))
    calls = [c for c in chunks if c.get("type") == "tool_call" and c.get("format") == "lmc.jobs"]
    assert calls, "the jobs calls show as tool calls of format lmc.jobs"
    started, curled, polled, listed, stopped, unknown = _outputs(chunks)
    assert "goes on in the background as job 1" in started
    # The next shell block reaches the server over the session's loopback (network off).
    assert curled == "reached\n"
    assert polled.startswith("job 1 is still running")
    assert "1  running" in listed and "http.server" in listed
    assert stopped.startswith("job 1 stopped")
    assert unknown.startswith("There is no job 7 (jobs: 1)")
    assert wait_until_gone(*server)
    assert not pids_of(*server)
    # The model was told about the function.
    assert interpreter.job_tools is not None
    assert [d.name for d in interpreter.job_tools.descriptions()] == ["jobs"]


def test_the_model_writes_to_a_job_and_ends_its_input_each_confirmed(make: Any) -> None:
    """``read`` and ``cat`` answered through the jobs function, every call confirmed by the
    person (the real terminal confirmer, scripted answers); a declined ``eof`` does nothing."""
    marker = f"marker-{secrets.token_hex(6)}"
    cat = ("cat", "-", marker)  # stdin, then an empty file: a command line all its own
    waits = "while [ ! -e go ]; do sleep 0.05; done; "
    block = f"touch {marker}; {waits}read -p 'Continue? ' ans; echo got:$ans; cat - {marker}"
    interpreter = make(
        _shell(block),
        _jobs(action="write", job=1, text="yes"),
        _shell("touch go"),
        _jobs(action="eof", job=1),
        _jobs(action="eof", job=1, wait=60),
        _final("It answered yes."),
        block_timeout=1,
        auto_run=False,
    )
    asked, ask = scripted_asker("y", "y", "y", "n", "", "y")
    confirmer = Confirmer(auto_run=False, ask=ask, say=lambda text: None)
    running_after_the_decline: list[bool] = []

    def confirm(block: Any) -> Any:
        if len(asked) == 5:  # the second eof: cat still reads, its input still open
            running_after_the_decline.append(wait_until_running(*cat))
        return confirmer(block)

    chunks = list(interpreter.chat("answer it", stream=True, display=False, confirm=confirm))
    started, written, touched, declined, ended = _outputs(chunks)
    assert "goes on in the background as job 1" in started
    # The API's consumer gets it typed, too.
    [typed] = [chunk for chunk in chunks if chunk["type"] == "job"]
    assert typed.get("content") == {
        "job": 1,
        "language": "shell",
        "command": block,
        "after": 1.0,
        "input": True,
    }
    assert written.startswith("job 1: 4 bytes sent"), written
    assert touched == ""
    assert declined == TOOL_DECLINED + "\n"
    assert running_after_the_decline == [True]
    assert ended.startswith("job 1: its input is closed (end of input); it is finished"), ended
    assert "got:yes" in ended
    assert len(asked) == 6  # five calls, the declined one's reason asked too
    assert wait_until_gone(*cat)


def test_every_job_is_stopped_when_the_interpreter_closes(make: Any) -> None:
    port = str(20000 + secrets.randbelow(30000))
    server = (sys.executable, "-m", "http.server", port)
    interpreter = make(_shell(" ".join(server)), _final("left running"), block_timeout=1)
    list(interpreter.chat("start it", stream=True, display=False))
    assert pids_of(*server)
    interpreter.close()
    assert wait_until_gone(*server)


def test_no_jobs_function_without_a_block_timeout(make: Any) -> None:
    assert make(_final("x"), block_timeout=0).job_tools is None


def test_arguments_are_checked_in_one_line() -> None:
    tools = JobTools(lambda: Computer(block_timeout=1).jobs)
    call = tools.find("jobs")
    assert call is not None and tools.find("shell") is None
    for text, error in [
        ("{", "not valid JSON"),
        ('{"action": "kill", "job": 1}', '"action" must be'),
        ('{"action": "stop"}', 'stop needs "job"'),
        ('{"action": "poll", "job": 1, "wait": -1}', '"wait" must be'),
        ('{"action": "write", "job": 1}', 'write needs "text"'),
        ('{"action": "write", "job": 1, "text": "y", "newline": 1}', '"newline" must be'),
        ('{"action": "eof"}', 'eof needs "job"'),
    ]:
        with pytest.raises(ValueError, match=error):
            tools.arguments(call, text)
    assert tools.arguments(call, '{"job": "2"}') == {"action": "poll", "job": 2, "wait": 0.0}
    write = tools.arguments(call, '{"action": "write", "job": 1, "text": "y"}')
    assert write == {"action": "write", "job": 1, "wait": 0.0, "text": "y\n"}
    raw = '{"action": "write", "job": 1, "text": "y", "newline": false}'
    assert tools.arguments(call, raw)["text"] == "y"
    assert tools.answer({"action": "list"}) == "There are no jobs.\n"
