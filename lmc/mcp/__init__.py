"""MCP (Model Context Protocol) both ways.

- :mod:`lmc.mcp.config`: ``[mcp.servers.NAME]`` tables checked into :class:`McpServerConfig`.
- :mod:`lmc.mcp.client`: :class:`~lmc.mcp.client.McpManager` starts servers and calls tools
  from synchronous code (a private asyncio loop in its own thread).
- :mod:`lmc.mcp.tools`: the servers' tools as the agent's ``functions.SERVER__TOOL``.
- :mod:`lmc.mcp.serve`: ``lmc mcp serve``, lmc's kernels as an MCP server on stdio.

Nothing here imports the SDK until a server is started or served.
"""

from lmc.mcp.config import McpServerConfig

__all__ = ["McpServerConfig"]
