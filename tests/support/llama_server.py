"""llama.cpp's own OpenAI-compatible server (``python -m llama_cpp.server``) on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

#: Starting Python and loading the model takes seconds on a loaded 2-core machine.
START = 120.0


@contextmanager
def llama_server(model: Path, *, context: int) -> Iterator[str]:
    """The server on a free port with ``model``; yields its ``/v1`` base URL, ends it after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context),
        "--n_threads", "1", "--n_threads_batch", "1", "--verbose", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise RuntimeError(f"llama_cpp.server exited: {process.stderr.read()[-2000:]!r}")
            try:
                if httpx.get(f"{base}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start within {START:g} s")
            time.sleep(0.1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
