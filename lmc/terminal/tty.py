"""Terminal modes for the chat: keep Ctrl-C from echoing ``^C`` into the live region; and
whether the person asked for no colour at all.

A ``^C`` echoed at the end of a full-width line wraps the cursor to a new line, and the live
region can then no longer be erased exactly. Turning off ECHOCTL for the session avoids it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["console_options", "no_control_echo", "no_style_wanted"]


def no_style_wanted(env: Mapping[str, str] | None = None) -> bool:
    """``NO_COLOR`` (any non-empty value, no-color.org) or ``TERM=dumb``."""
    env = os.environ if env is None else env
    return bool(env.get("NO_COLOR")) or env.get("TERM") == "dumb"


def console_options(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keywords for every rich Console lmc makes: under NO_COLOR no escape code at all. Rich's
    own NO_COLOR drops colours but keeps dim, bold and underline; no colour system drops them
    all."""
    return {"color_system": None} if no_style_wanted(env) else {}


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
