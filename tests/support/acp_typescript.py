"""The official TypeScript ACP SDK (``@agentclientprotocol/sdk`` on npm), for tests.

Installed once with npm into a cache folder (``$LMC_TEST_CACHE`` or ``~/.cache/lmc-tests``),
pinned to :data:`VERSION` with its peer ``zod``, as the MCP reference server is
(:mod:`support.everything_server`). The package also ships ACP's JSON Schema
(``schema/v1/schema.json``), which :func:`official_schema` reads.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["VERSION", "official_schema", "sdk_folder"]

PACKAGE = "@agentclientprotocol/sdk"
VERSION = "2.4.0"
ZOD = "zod@4.6.7"


def _cache() -> Path:
    root = os.environ.get("LMC_TEST_CACHE") or str(Path.home() / ".cache" / "lmc-tests")
    return Path(root) / f"acp-sdk-{VERSION}"


def sdk_folder() -> Path:
    """A folder whose node_modules holds the SDK (installed with npm first if needed)."""
    folder = _cache()
    if not (folder / "node_modules" / PACKAGE / "package.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder),
             f"{PACKAGE}@{VERSION}", ZOD],
            check=True,
            capture_output=True,
            timeout=600,
        )  # fmt: skip
    return folder


def official_schema() -> dict[str, Any]:
    """ACP v1's JSON Schema as the SDK ships it."""
    path = sdk_folder() / "node_modules" / PACKAGE / "schema" / "v1" / "schema.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema
