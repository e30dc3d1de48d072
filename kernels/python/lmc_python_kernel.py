"""lmc's Python kernel: ipykernel plus an active-line tracker that never rewrites the code.

Open Interpreter learns the active line by injecting ``print("##active_line N##")`` before
every statement, which slows tight loops many times over, shifts traceback line numbers and
drops docstrings. This kernel runs the cell untouched and watches it from the side instead:

* For the first few thousand trace events of a cell, ``sys.settrace`` reports each line the
  first time it runs, exactly and in order, so short cells (``print(1)`` then ``print(2)``)
  show every line. Lines that take long (a ``sleep``) cost no events.
* From 20 ms into the cell on, a sampling thread reads the executing thread's frame every
  20 ms with ``sys._current_frames()`` and reports the line of the innermost frame belonging
  to the cell when it changed (a frame caught as it starts has no line yet and is skipped):
  that covers a loop going back to earlier lines, and everything after the trace budget is
  spent and tracing is switched off (no per-line cost any more).

Line changes go out on IOPub as ``lmc_active_line`` messages (content ``{"line": n}``, parent
the execute request), scheduled on the IOPub thread right after a flush of stdout and stderr,
so a consumer sees output and active lines in the order they happened.

A block's round trip carries nothing lmc does not read (``quicken_replies``, the history in
memory, an empty stream's flush skipped): ``scripts/bench_computer.py roundtrip --against``.

Launched as ``python lmc_python_kernel.py -f CONNECTION_FILE`` (see kernel.json).
"""

from __future__ import annotations

import opcode
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from ipykernel.iostream import OutStream

#: Trace events a cell may spend on exact line reporting before sampling takes over.
TRACE_BUDGET = 2000
#: Characters a stream may buffer before it is sent, so messages stay small (a consumer's
#: memory) and a print loop waits for IOPub instead of piling up hundreds of MB.
MAX_PENDING_OUTPUT = 256 * 1024
#: Bytes the watcher thread reads from the pipe that captures fd 1/2 at a time.
PIPE_CHUNK = 64 * 1024
#: Seconds a flush waits at most for the watcher to carry the pipe's bytes into the buffer.
PIPE_WAIT = 2.0
#: What ipykernel's OutStream keeps for its watcher thread (6.x and 7.x).
_WATCHER_STATE = ("_fid", "_should_watch", "_original_stdstream_copy", "_exc")
#: Seconds between two samples of the running frame once tracing is off.
SAMPLE_INTERVAL = 0.02

TraceFunction = Callable[[FrameType, str, Any], Any]

#: The instruction a frame starts on (Python 3.11+); sampled there, it has no line yet.
_RESUME = opcode.opmap["RESUME"]


class ChunkedOutStream(OutStream):
    """ipykernel's stdout/stderr, also flushed every ``MAX_PENDING_OUTPUT`` characters.

    Output written to fd 1/2 (a child process, a C library) reaches the buffer through the
    watcher thread, which reads the capturing pipe. A flush first waits until the bytes the
    pipe held when it was called are in the buffer: a block's last subprocess output is the
    block's (stock ipykernel's flush raced the watcher and lost it to a timer flush after the
    idle status, about one block in four under load).

    A flush with nothing buffered then returns at once: ipykernel flushes both streams
    before every reply, and each flush from the cell's thread is a round trip through the
    IOPub thread (two thread switches), for stderr almost always with nothing to send.
    """

    _pending = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Before OutStream starts the watcher thread, which uses them.
        self._pipe_turn = threading.Condition(threading.RLock())
        self._carried = 0  # bytes the watcher moved from the pipe into the buffer
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]

    def flush(self) -> None:
        self._take_in_pipe()
        if not self._holds_nothing():
            super().flush()  # type: ignore[no-untyped-call]

    def _watch_pipe_fd(self) -> None:
        """ipykernel's watcher: the pipe's bytes to the buffer and to the original fd, each
        chunk read and written under ``_pipe_turn``, counted in ``_carried``."""
        if not all(hasattr(self, name) for name in _WATCHER_STATE):  # another ipykernel
            super()._watch_pipe_fd()  # type: ignore[no-untyped-call]
            return
        pipe = self._fid
        if pipe is None:
            return
        readable = select.poll()
        readable.register(pipe, select.POLLIN)
        try:
            while self._should_watch:
                readable.poll()
                with self._pipe_turn:
                    data = os.read(pipe, PIPE_CHUNK)
                    if not data or not self._should_watch:
                        return
                    self.write(data.decode(errors="replace"))
                    os.write(self._original_stdstream_copy, data)
                    self._carried += len(data)
                    self._pipe_turn.notify_all()
        except Exception:
            self._exc = sys.exc_info()

    def _take_in_pipe(self) -> None:
        """Wait until the bytes in the capturing pipe now are in the buffer (at most
        ``PIPE_WAIT`` seconds, for a watcher that cannot go on)."""
        watcher = getattr(self, "watch_fd_thread", None)
        pipe = getattr(self, "_fid", None)
        if pipe is None or watcher is None or watcher is threading.current_thread():
            return
        if not self._is_master_process():  # type: ignore[no-untyped-call]
            return  # a forked child: the watcher (and maybe its lock) stayed in the kernel
        deadline = time.monotonic() + PIPE_WAIT
        with self._pipe_turn:  # the watcher is between chunks: each byte is in one place
            target = self._carried + _unread(pipe)
            while self._carried < target and watcher.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._pipe_turn.wait(min(left, 0.1))

    def _holds_nothing(self) -> bool:
        """Nothing buffered and nothing waiting in the pipe that captures fd 1/2."""
        lock = getattr(self, "_buffer_lock", None)
        buffers = getattr(self, "_buffers", None)
        if lock is None or not isinstance(buffers, dict):  # another ipykernel: as it does
            return False
        with lock:
            if any(buffer.tell() for buffer in buffers.values()):
                return False
        pipe = getattr(self, "_fid", None)
        return pipe is None or _unread(pipe) == 0

    def write(self, string: str) -> int:
        super().write(string)
        self._pending += len(string)
        if self._pending >= MAX_PENDING_OUTPUT:
            self._pending = 0
            self.flush()
        return len(string)


def _unread(pipe: int) -> int:
    """Bytes waiting in ``pipe`` (1 where it cannot be asked: never taken for empty)."""
    import fcntl  # here: a gateway on Windows loads this file for the tracker alone
    import termios

    try:
        waiting = fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 1
    return int.from_bytes(waiting, sys.byteorder)


class ActiveLineTracker:
    """Reports the line of the running cell on IOPub while the cell runs."""

    def __init__(self, kernel: Any, shell: Any) -> None:
        self._kernel = kernel
        self._shell = shell
        self._topic = kernel._topic("lmc_active_line")
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._cell_file: str | None = None
        self._parent: dict[str, Any] = {}
        self._thread_id = 0
        self._last: int | None = None
        self._seen: set[int] = set()
        self._budget = 0
        self._tracer: TraceFunction = self._trace_call
        self._line_tracer: TraceFunction = self._trace_line

    def install(self) -> None:
        self._shell.events.register("pre_run_cell", self._pre_run_cell)
        self._shell.events.register("post_run_cell", self._post_run_cell)
        threading.Thread(target=self._sample_forever, name="lmc-active-line", daemon=True).start()

    # -- cell lifecycle (main thread) -------------------------------------------------------

    def _pre_run_cell(self, info: Any) -> None:
        raw = info.raw_cell
        with self._lock:
            self._cell_file = self._shell.compile.get_code_name(
                raw, raw, self._shell.execution_count
            )
            self._parent = self._kernel.get_parent("shell")
            self._thread_id = threading.get_ident()
            self._last = None
            self._seen = set()
            self._budget = TRACE_BUDGET
        if sys.gettrace() is None:  # never displace a debugger the user installed
            sys.settrace(self._tracer)
        self._running.set()

    def _post_run_cell(self, result: Any) -> None:
        self._stop_tracing()
        self._running.clear()
        with self._lock:
            self._cell_file = None

    # -- exact phase: sys.settrace ----------------------------------------------------------

    def _trace_call(self, frame: FrameType, event: str, arg: Any) -> TraceFunction | None:
        if frame.f_code.co_filename == self._cell_file:
            return self._line_tracer
        self._spend()
        return None

    def _trace_line(self, frame: FrameType, event: str, arg: Any) -> TraceFunction | None:
        if event == "line":
            line = frame.f_lineno
            if line not in self._seen:  # a loop's revisits are the sampler's: no message storm
                self._seen.add(line)
                with self._lock:  # never between a sample and its report
                    self._report(line)
            self._spend()
        return self._line_tracer

    def _spend(self) -> None:
        self._budget -= 1
        if self._budget <= 0:
            self._stop_tracing()

    def _stop_tracing(self) -> None:
        if sys.gettrace() is self._tracer:
            sys.settrace(None)

    # -- sampling phase: a thread reading the running frame ---------------------------------

    def _sample_forever(self) -> None:
        while True:
            self._running.wait()
            # A cell's first lines are the tracer's: sampling starts one interval in, so a
            # short cell (most blocks) costs this thread one wake and takes no GIL from it.
            time.sleep(SAMPLE_INTERVAL)
            while self._running.is_set():
                self._sample()
                time.sleep(SAMPLE_INTERVAL)

    def _sample(self) -> None:
        with self._lock:
            cell_file = self._cell_file
            if cell_file is None:
                return
            frame: FrameType | None = sys._current_frames().get(self._thread_id)
            while frame is not None and not (
                frame.f_code.co_filename == cell_file and _on_a_line(frame)
            ):
                frame = frame.f_back
            if frame is not None and frame.f_lineno != self._last:
                self._report(frame.f_lineno)

    # -- reporting --------------------------------------------------------------------------

    def _report(self, line: int) -> None:
        """Send the line after whatever the cell printed before reaching it.

        ``OutStream._flush`` takes the buffered text under the stream's lock and queues it on
        the IOPub thread; queueing the active line right after keeps the two in order.
        """
        self._last = line
        for stream in (sys.stdout, sys.stderr):
            flush = getattr(stream, "_flush", None)
            if flush is not None:
                flush()
        self._kernel.session.send(
            self._kernel.iopub_thread,
            "lmc_active_line",
            {"line": line},
            self._parent,
            ident=self._topic,
        )


def _on_a_line(frame: FrameType) -> bool:
    """Whether ``frame`` has reached its first line: a frame caught as it starts (the GIL
    changes hands there) is still on its ``RESUME``, whose line is the ``def`` line, or 0 for
    a statement of the cell (IPython runs each in a frame of its own). The line the call
    comes from is the one running then."""
    code = frame.f_code.co_code
    start = next((i for i in range(0, len(code), 2) if code[i] == _RESUME), -1)
    return frame.f_lasti > start and bool(frame.f_lineno)


def quicken_replies(kernel: Any) -> None:
    """Take out what each execute request costs ipykernel and lmc never reads.

    * ipykernel sleeps 0.5 ms before every reply (``_execute_sleep``, a FIXME for frontends
      that took the reply before output on IOPub); lmc waits for the IOPub idle status, which
      follows all output on the same socket.
    * ``execute_input`` repeats the code on IOPub for other frontends; lmc is the only one
      and drops it (a message serialised, signed, sent and checked for nothing).
    """
    kernel._execute_sleep = 0.0
    kernel._publish_execute_input = _no_execute_input


def _no_execute_input(code: str, parent: Any, execution_count: int) -> None:
    pass


def _plain_python_path() -> None:
    """Drop this script's directory from sys.path so it cannot shadow the user's modules."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]


def _load_shared(relative: str) -> Any:
    """A module of the shared kernel code (``kernels/``), loaded by path: putting ``kernels/``
    on sys.path would let its folders shadow the user's modules."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, relative)
    spec = importlib.util.spec_from_file_location(f"_lmc_{os.path.basename(path)[:-3]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    _plain_python_path()
    # ipykernel skips capturing fd 1/2 (os.write, C libraries, subprocesses) when it thinks
    # it runs inside pytest; the code this kernel runs is never pytest's.
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(  # type: ignore[no-untyped-call]
        [
            *sys.argv[1:],
            "--IPKernelApp.quiet=True",
            "--IPKernelApp.outstream_class=__main__.ChunkedOutStream",
            "--InteractiveShell.colors=nocolor",
            "--InteractiveShell.xmode=Plain",
            # The session's inputs stay in memory (In, _i, %history): no SQLite file in the
            # person's ~/.ipython written by a thread after every block, contending with the
            # cell's thread for its lock.
            "--HistoryManager.hist_file=:memory:",
        ]
    )
    quicken_replies(app.kernel)
    ActiveLineTracker(app.kernel, app.shell).install()
    # After the tracker's hook: a snapshot's time is not the cell's last line.
    _load_shared("python/lmc_state.py").install_from_environment(app.shell)
    _load_shared("lmc_wrapper/iopub.py").hold_output_for_slow_readers(app)
    app.start()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
