"""A kernel's run holds no lock across a ``yield``: a run left suspended (its consumer
stopped reading) neither blocks a second request nor the shutdown; the sockets stay with the
run until it ends, since they are not thread-safe, and it closes them then."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

from lmc.computer.kernel import KernelSession
from lmc.computer.kernelspecs import kernel_spec
from lmc.computer.languages import resolve_language
from lmc.errors import ComputerError


def test_a_suspended_run_blocks_nothing_and_releases_the_sockets(tmp_path: Path) -> None:
    python = resolve_language("python")
    assert python is not None and python.kernel is not None
    session = KernelSession(kernel_spec(python.kernel), runtime_dir=tmp_path)
    try:
        code = "print('started', flush=True)\nimport time\ntime.sleep(60)"
        run = cast(Generator[Any, None, None], session.execute(code))
        first = next(run)  # the run is now suspended in the middle of its request
        assert isinstance(first, dict)  # an IOPub message of this request
        with pytest.raises(ComputerError, match="already running code"):
            next(session.execute("1 + 1"))  # was: waited forever on the run's lock
        pid = session.pid
        session.shutdown()  # was: waited on the lock, then left the sockets open
        assert pid is not None and not session.alive
        assert session._channels is not None  # still the suspended run's
        run.close()
        assert session._channels is None  # the run let go
    finally:
        session.shutdown()
