"""The reference MCP server ``@modelcontextprotocol/server-everything`` from npm, for tests.

It is installed once with npm into a cache folder (``$LMC_TEST_CACHE`` or
``~/.cache/lmc-tests``), pinned to :data:`VERSION`, so CI repeats exactly what a developer
ran; later runs reuse it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.mcp_servers import free_port, serving_mcp_http

__all__ = ["VERSION", "everything_bin", "everything_http"]

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"


def _cache() -> Path:
    root = os.environ.get("LMC_TEST_CACHE") or str(Path.home() / ".cache" / "lmc-tests")
    return Path(root) / f"server-everything-{VERSION}"


def everything_bin() -> Path:
    """The server's executable, installing it with npm first if needed."""
    folder = _cache()
    executable = folder / "node_modules" / ".bin" / "mcp-server-everything"
    if not executable.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(folder),
                f"{PACKAGE}@{VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    return executable


@contextmanager
def everything_http() -> Iterator[str]:
    """The server on streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    with serving_mcp_http([str(everything_bin()), "streamableHttp"], port, env) as url:
        yield url
