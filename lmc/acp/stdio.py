"""Standard input and output for the protocol alone; standard error that never blocks lmc.

The protocol's pipes are kept on private descriptors, and fd 0 and 1 are pointed elsewhere
(``/dev/null``, and standard error) so that nothing else, a ``print`` or a process lmc starts,
can read the client's lines or write into lmc's.

An editor may read an agent's stderr rarely or never (the Python SDK pipes it and never
reads it): a plain write there blocks once the pipe is full, and with it the turn that
logged. So fd 2 becomes a pipe that a thread of lmc's drains at once into a bounded buffer,
and a second thread writes that buffer to the real stderr as fast as it is read; when the
reader falls far behind, the oldest lines are dropped (and the drop is said), never waited
for. Only that second thread can block, and it is nobody's turn.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO, Final

__all__ = ["KEPT_BYTES", "ProtocolPipes", "take_stdio"]

#: Bytes of log kept for a slow stderr reader before the oldest are dropped.
KEPT_BYTES: Final = 1024 * 1024


class _Pump:
    """fd 2's pipe -> a bounded buffer -> the real stderr."""

    def __init__(self, read_fd: int, real_fd: int) -> None:
        self._read_fd = read_fd
        self._real_fd = real_fd
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._dropped = 0
        self._writing = False
        self._ready = threading.Condition()
        threading.Thread(target=self._drain, name="stderr-drain", daemon=True).start()
        threading.Thread(target=self._write, name="stderr-write", daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 65536)
            except OSError:
                return
            if not data:
                return
            with self._ready:
                self._chunks.append(data)
                self._size += len(data)
                while self._size > KEPT_BYTES and len(self._chunks) > 1:
                    self._dropped += len(self._chunks[0])
                    self._size -= len(self._chunks.popleft())
                self._ready.notify()

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._chunks:
                    self._ready.wait()
                data = self._chunks.popleft()
                self._size -= len(data)
                dropped, self._dropped = self._dropped, 0
                self._writing = True
            if dropped:
                data = (
                    f"lmc: [{dropped} bytes of log dropped: stderr was not read]\n".encode() + data
                )
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._real_fd, view) :]
            except OSError:
                return  # stderr is gone: the log goes nowhere
            finally:
                with self._ready:
                    self._writing = False
                    self._ready.notify_all()

    def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until what was logged so far reached stderr."""
        sys.stdout.flush()
        sys.stderr.flush()
        deadline = time.monotonic() + timeout
        with self._ready:
            while self._chunks or self._writing:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._ready.wait(min(left, 0.05))


class ProtocolPipes:
    """The client's lines in (a binary reader) and the descriptor lmc's lines go out on."""

    def __init__(self, reader: BinaryIO, out_fd: int, pump: _Pump) -> None:
        self.reader = reader
        self.out_fd = out_fd
        self._pump = pump

    def flush_log(self, timeout: float = 2.0) -> None:
        """Before exit: let the log reach stderr (if its reader reads, within ``timeout``)."""
        self._pump.flush(timeout)


def take_stdio() -> ProtocolPipes:
    """Keep stdin/stdout for the protocol and make stderr a pipe that never blocks lmc."""
    sys.stdout.flush()
    sys.stderr.flush()
    in_fd, out_fd, real_err = os.dup(0), os.dup(1), os.dup(2)
    for fd in (in_fd, out_fd, real_err):
        os.set_inheritable(fd, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    read_fd, write_fd = os.pipe()
    os.set_inheritable(read_fd, False)
    os.dup2(write_fd, 2)
    os.dup2(write_fd, 1)  # a stray print, or a child's, lands in the log
    os.close(write_fd)
    pump = _Pump(read_fd, real_err)
    sys.stdin = Path(os.devnull).open(encoding="utf-8")  # noqa: SIM115 - as long as lmc
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    return ProtocolPipes(os.fdopen(in_fd, "rb"), out_fd, pump)
