"""Running a test's HTTP server on loopback for the length of a ``with`` block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


@contextmanager
def serving_in_thread(server: ThreadingHTTPServer) -> Iterator[None]:
    """Serve ``server`` from a thread of its own; shut down and closed when the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
