"""The line of a launcher's stderr that explains a failed start (npx's is tested for real in
test_misbehaving.py; uv is not installed here, so its output is taken from a report)."""

from __future__ import annotations

from lmc.mcp.stderr import cause

# `uvx mcp-server-quadrant`, as reported in github.com/qdrant/mcp-server-qdrant issue 96.
UVX_MISSING = """\
  × No solution found when resolving tool dependencies:
  ╰─▶ Because mcp-server-quadrant was not found in the package registry
      and you require mcp-server-quadrant, we can conclude that your
      requirements are unsatisfiable.
"""


def test_uvx_missing_package() -> None:
    assert cause(UVX_MISSING) == (
        "╰─▶ Because mcp-server-quadrant was not found in the package registry"
    )


def test_otherwise_the_last_line_that_is_not_noise() -> None:
    assert cause("starting\nTraceback ...\nValueError: no token\n") == "ValueError: no token"
    assert cause("") == ""
