"""Blocks handed back after their time limit: background jobs the model can poll and stop.

When a block runs past ``block_timeout`` its run is not lost: :class:`~lmc.computer.Computer`
hands the rest of the run (the chunk stream, still coming from the kernel) to a :class:`Job`,
whose thread keeps reading it into a bounded buffer, and the turn goes on. The model polls the
job (new output since the last poll, and whether it is still running), writes to its stdin or
closes it (shell jobs: the kernel keeps the block's stdin open once it is a job), or stops it;
the person
lists and stops them with ``%jobs`` and ``%stop N``; :meth:`JobTable.stop_all` ends them all
when the computer closes.

How a job is stopped is the computer's business (it knows the kernel): a :class:`Job` is given
``interrupt`` (ask the code to stop) and ``kill`` (free the kernel for good) and tries them in
that order, with a grace in between, and says which one it took.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from lmc.messages import Chunk, JobChunk, console_output

#: Writes text to a job's stdin (None: end of input); whether it did, and what happened.
GiveInput = Callable[[str | None], tuple[bool, str]]

__all__ = [
    "MAX_JOBS",
    "STOP_GRACE",
    "GiveInput",
    "Job",
    "JobTable",
    "Poll",
    "describe",
    "hand_back_chunks",
    "hand_back_note",
    "handed_back_chunk",
]

#: Jobs that may run at once; past this a block that runs too long is interrupted instead.
MAX_JOBS: Final = 8
#: Seconds a job gets to end after its interrupt before the kernel it holds is freed for good.
#: The wrapper kernels escalate SIGINT to SIGTERM and SIGKILL of the code's processes within
#: two seconds; lmc's own kernel watch restarts a kernel that ignores an interrupt after 3 s.
STOP_GRACE: Final = 4.0
#: Characters of a job's output kept for the next poll (the oldest go first).
BUFFER_LIMIT: Final = 64_000


@dataclass(frozen=True)
class Poll:
    """What a poll found: the output since the last one, and where the job stands."""

    output: str
    state: str  # "running", "finished" or "stopped"
    dropped: int  # characters lost because nobody polled while the buffer was full


class Job:
    """One handed-back run: its rest streams into a buffer on a thread of its own."""

    def __init__(
        self,
        number: int,
        language: str,
        code: str,
        rest: Iterator[Chunk],
        *,
        interrupt: Callable[[], None],
        kill: Callable[[], None],
        on_end: Callable[[], None] = lambda: None,
        holds: object = None,
        give_input: GiveInput | None = None,
        no_input: str = "",
    ) -> None:
        """``give_input(text)`` writes to the job's stdin (None: end of input) and says
        whether it did and what happened; without it, ``no_input`` says why there is none."""
        self.id = number
        #: What the job keeps busy (its kernel), for the computer to tell.
        self.holds = holds
        self.language = language
        self.code = code
        self.started_at = time.monotonic()
        self._rest = rest
        self._interrupt = interrupt
        self._kill = kill
        self._on_end = on_end
        self._give_input = give_input
        self._no_input = no_input or "its kernel runs the code in its own process"
        self._lock = threading.Lock()
        self._unread = ""
        self._dropped = 0
        self._last_line = ""
        self._stopped = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"lmc-job-{number}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def command(self) -> str:
        """The block's first non-empty line, to name the job by."""
        lines = [line.strip() for line in self.code.splitlines() if line.strip()]
        return lines[0] if lines else ""

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    @property
    def state(self) -> str:
        if self.running:
            return "running"
        return "stopped" if self._stopped else "finished"

    @property
    def age(self) -> float:
        return time.monotonic() - self.started_at

    @property
    def last_line(self) -> str:
        with self._lock:
            return self._last_line

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the job's run is over; whether it is."""
        return self._done.wait(timeout)

    def poll(self) -> Poll:
        """The output since the last poll (or the hand-back), and the job's state."""
        state = self.state  # read first: output that came before the end is all there
        with self._lock:
            output, self._unread = self._unread, ""
            dropped, self._dropped = self._dropped, 0
        return Poll(output, state, dropped)

    def stop(self, grace: float = STOP_GRACE) -> str:
        """Stop the job: an interrupt, then (after ``grace``) the kernel is freed for good.
        Returns what happened, in words."""
        if not self.running:
            return f"job {self.id} had already {self.state}"
        self._stopped = True
        self._interrupt()
        if self._done.wait(grace):
            return f"job {self.id} stopped (interrupted)"
        self._kill()
        if self._done.wait(grace):
            return (
                f"job {self.id} did not stop within {grace:g} s of the interrupt, so its "
                f"{self.language} kernel was ended (SIGKILL)"
            )
        return f"job {self.id} could not be stopped"

    @property
    def takes_input(self) -> bool:
        return self._give_input is not None

    def send_input(self, text: str | None) -> str:
        """``text`` to the job's stdin, or (None) end of input; what happened, in words."""
        if not self.running:
            return f"job {self.id} had already {self.state}, so it takes no input"
        if self._give_input is None:
            return f"job {self.id} takes no input: {self._no_input}"
        done, said = self._give_input(text)
        if done:
            return f"job {self.id}: {said}"
        return f"job {self.id}: no input was sent: {said}"

    def kill(self) -> None:
        """End the job at once, without an interrupt first (lmc is closing)."""
        if self.running:
            self._stopped = True
            self._kill()

    def _pump(self) -> None:
        try:
            for chunk in self._rest:
                if chunk["type"] == "console" and chunk.get("format") == "output":
                    self._add(str(chunk.get("content") or ""))
        except Exception as exc:  # the kernel went away under it: said, not raised
            self._add(f"\n(job {self.id} ended: {exc})\n")
        finally:
            self._done.set()
            self._on_end()

    def _add(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            self._unread += text
            if len(self._unread) > BUFFER_LIMIT:
                cut = len(self._unread) - BUFFER_LIMIT
                self._dropped += cut
                self._unread = self._unread[cut:]
            lines = [line for line in text.splitlines() if line.strip()]
            if lines:
                self._last_line = lines[-1][:200]


class JobTable:
    """A computer's jobs by id (ids count up from 1 and are never reused)."""

    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._next = 1
        self._lock = threading.Lock()

    def full(self) -> bool:
        return sum(job.running for job in self.list()) >= MAX_JOBS

    def add(
        self,
        language: str,
        code: str,
        rest: Iterator[Chunk],
        *,
        interrupt: Callable[[], None],
        kill: Callable[[], None],
        on_end: Callable[[], None] = lambda: None,
        holds: object = None,
        give_input: GiveInput | None = None,
        no_input: str = "",
    ) -> Job:
        """A new job for ``rest``, started."""
        with self._lock:
            number = self._next
            self._next += 1
            job = Job(
                number,
                language,
                code,
                rest,
                interrupt=interrupt,
                kill=kill,
                on_end=on_end,
                holds=holds,
                give_input=give_input,
                no_input=no_input,
            )
            self._jobs[number] = job
        job.start()
        return job

    def get(self, number: int) -> Job | None:
        with self._lock:
            return self._jobs.get(number)

    def list(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def holding(self, key: Callable[[Job], bool]) -> Job | None:
        """A running job ``key`` picks (the one that holds a given kernel)."""
        return next((job for job in self.list() if job.running and key(job)), None)

    def kill_all(self) -> None:
        """End every running job at once (the computer closes)."""
        for job in self.list():
            job.kill()

    def stop_all(self) -> None:
        """Stop every running job, in parallel (each may wait its grace)."""
        threads = [
            threading.Thread(target=job.stop, name="lmc-job-stop", daemon=True)
            for job in self.list()
            if job.running
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def describe(job: Job) -> str:
    """One line about a job for ``%jobs`` and the jobs tool's list (what the code wrote is
    shown with its control characters as ``?``: it goes to lmc's own terminal)."""
    last = f" | {_printable(job.last_line)}" if job.last_line else ""
    command = _printable(_shortened(job.command))
    return f"{job.id}  {job.state:<8} {job.age:6.0f}s  {job.language}: {command}{last}"


def _shortened(command: str, width: int = 60) -> str:
    """``command`` in ``width`` characters: its start and its end (a long interpreter path in
    front would otherwise leave only the path, not what it runs)."""
    if len(command) <= width:
        return command
    keep = (width - 3) // 2
    return f"{command[:keep]}...{command[-(width - 3 - keep) :]}"


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def hand_back_note(job: Job, seconds: float, *, fresh_shell: bool) -> str:
    """What the model is told when its block becomes a job."""
    fresh = (
        " A fresh shell runs the next shell block (variables and `cd` of earlier shell blocks "
        "are gone; the job keeps its own)."
        if fresh_shell
        else f" The {job.language} kernel is busy with it until it ends or is stopped."
    )
    feed = (
        f', send it a line of input ({{"action": "write", "job": {job.id}, "text": "..."}}) '
        f'or end its input ({{"action": "eof", "job": {job.id}}}),'
        if job.takes_input
        else ""
    )
    return (
        f"\nlmc: still running after {seconds:g} s, so it goes on in the background as job "
        f"{job.id}; the output so far is above.{fresh} Use the jobs tool to see its new "
        f'output ({{"action": "poll", "job": {job.id}}}){feed} or stop it '
        f'({{"action": "stop", "job": {job.id}}}).\n'
    )


def handed_back_chunk(job: Job, seconds: float) -> JobChunk:
    """The typed chunk that says a block became job N (beside the note the model reads)."""
    return {
        "role": "computer",
        "type": "job",
        "format": "handed_back",
        "content": {
            "job": job.id,
            "language": job.language,
            "command": job.command,
            "after": float(seconds),
            "input": job.takes_input,
        },
    }


def hand_back_chunks(job: Job, seconds: float, *, fresh_shell: bool) -> tuple[Chunk, Chunk]:
    """What a run yields when its block becomes ``job``: the note the model reads (console
    output), then the typed chunk for consumers."""
    note = hand_back_note(job, seconds, fresh_shell=fresh_shell)
    return console_output(note), handed_back_chunk(job, seconds)
