"""The clocks of one execute request, the same for a local and a remote kernel.

A run is over once the kernel has replied and said it is idle. Three clocks can end it
otherwise: its time limit (the code is interrupted, once), the grace after an interrupt (the
kernel is then restarted), and the idle status that never comes after the reply.
"""

from __future__ import annotations

import time
from typing import Final

from lmc.computer.kernel_events import InterruptIgnored, TimedOut

__all__ = ["IDLE_AFTER_REPLY", "INTERRUPT_GRACE", "RunWatch"]

#: Seconds a kernel gets to stop after an interrupt before it is killed and restarted.
INTERRUPT_GRACE: Final = 3.0
#: Seconds of IOPub silence after the execute reply before a lost idle status is assumed.
#: The kernel sends idle right after the reply; only a kernel whose IOPub drops messages under
#: a slow reader (IRkernel; lmc's own kernels wait instead) can lose it, and without this the
#: run would wait for it forever.
IDLE_AFTER_REPLY: Final = 5.0


class RunWatch:
    """Where one run stands: replied, idle, when the kernel was last heard, its deadline."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.replied = False
        self.idle = False
        self.quiet_since = 0.0  # when the last message of this run arrived

    @property
    def done(self) -> bool:
        return self.replied and self.idle

    def heard(self) -> None:
        """A message of this run arrived."""
        self.quiet_since = time.monotonic()

    def wake_at(self, interrupted_at: float | None) -> float | None:
        """When the next clock runs out (monotonic seconds); None while none runs."""
        due = [] if self.deadline is None else [self.deadline]
        if interrupted_at is not None:
            due.append(interrupted_at + INTERRUPT_GRACE)
        if self.replied:
            due.append(self.quiet_since + IDLE_AFTER_REPLY)
        return min(due, default=None)

    def finished(self) -> bool:
        """Replied and idle, or replied and silent so long that the idle status was lost."""
        if self.replied and time.monotonic() >= self.quiet_since + IDLE_AFTER_REPLY:
            self.idle = True
        return self.done

    def expired(self, interrupted_at: float | None) -> InterruptIgnored | TimedOut | None:
        """The fault a clock that ran out makes; the time limit makes one only once."""
        now = time.monotonic()
        if interrupted_at is not None and now >= interrupted_at + INTERRUPT_GRACE:
            return InterruptIgnored(INTERRUPT_GRACE)
        if self.deadline is not None and now >= self.deadline:
            self.deadline = None
            return TimedOut(self.timeout or 0.0)
        return None
