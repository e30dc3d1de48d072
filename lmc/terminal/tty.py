"""Terminal modes for the chat: keep Ctrl-C from echoing ``^C`` into the live region.

A ``^C`` echoed at the end of a full-width line wraps the cursor to a new line, and the live
region can then no longer be erased exactly. Turning off ECHOCTL for the session avoids it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_control_echo"]


@contextmanager
def no_control_echo() -> Iterator[None]:
    """Within the block, control characters typed are not echoed (POSIX terminals only)."""
    try:
        import termios
    except ImportError:  # Windows
        yield
        return
    stream = sys.stdin
    if not stream.isatty():
        yield
        return
    fd = stream.fileno()
    try:
        saved = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    changed = list(saved)
    changed[3] = changed[3] & ~termios.ECHOCTL
    termios.tcsetattr(fd, termios.TCSANOW, changed)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
